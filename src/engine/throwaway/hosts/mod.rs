//! Hosts on this machine, for the throwaway clusters of replicated stores
//! and the machine-loss test: a *host* is a directory of its own (its
//! disk) and the processes started for it (its memory).
//!
//! As root each host also gets a network namespace of its own, joined to
//! the others by veth links on a bridge in a private "switch" namespace,
//! and one link from this (the root) namespace to that bridge, for
//! blobbench's own clients ([`Network::Namespaces`]). Addresses live only
//! on those links, on a /24 that collides with none of the machine's
//! routes; a host's only route is that subnet, so nothing beyond this
//! machine is ever addressed, and no sysctl of the machine changes (the
//! bridge forwards, the root namespace does not route). Without root the
//! hosts share loopback, each server on ports of its own
//! ([`Network::Loopback`]), and what a loss can show is less (below).
//!
//! Losing a host ([`Hosts::lose`]) is a machine dying for good: its link
//! is taken down first, so that nothing it sends afterwards (the kernel's
//! resets for its killed sockets) reaches anyone and its peers' connections
//! hang as they would; then every process of the host is SIGKILLed; then
//! its directory is moved aside (kept for its logs until the hosts are
//! removed). On loopback the kernel resets its connections at once.
//! [`Hosts::replace`] brings a new, empty host in its place (same name and
//! address), as an operator would.
//!
//! Everything made here (namespaces, links, processes, directories) is
//! removed when the [`Hosts`] is dropped: at the end of a command, on an
//! error and at Ctrl-C. A killed blobbench leaves them; each set is
//! recorded first under its owner's pid and start time (the namespaces'
//! names carry them too), and [`reap_orphans`] ends the sets whose owner
//! has died: every [`Hosts::create`] calls it, and so do the studies
//! through the engines' `reap_killed`. Every process started in a host
//! carries its set's tag in its environment, so a process started and not
//! yet adopted when the run died (during `pg_ctl start`) is found too.
//!
//! The files: [`set`] makes, loses, replaces and removes a set of hosts;
//! [`host`] is one host (its directory, address, processes, and the
//! commands that start processes in it); `net` its network as root;
//! `record` and `reap` the records of the sets and the reaper of a killed
//! run's; [`replicated`] what a replicated store on hosts offers the
//! machine-loss test.

mod host;
mod kill;
mod net;
mod reap;
mod record;
pub mod replicated;
mod set;
#[cfg(test)]
mod tests;

pub use host::{Host, HostId, LostHost, Network};
pub use reap::reap_orphans;
pub use replicated::{no_replicas, Replicated};
pub use set::{Hosts, DIR, NETWORK_VAR};
