//! What a replicated store on [`Hosts`] offers the machine-loss test,
//! after Jepsen's protocols (a database over nodes, the nodes a fault may
//! strike, the store's own primary): a store implements this, and the
//! test's loop, its fault and its checker never change.

use std::net::SocketAddr;

use super::{HostId, Hosts, LostHost};
use crate::{Error, Result};

/// A store replicated across hosts, running.
///
/// The test's order, at each loss: [`Replicated::lose`] one host of
/// [`Replicated::losable`] while clients write, then
/// [`Replicated::fail_over`] (the store's own failover, as its operators
/// run it), then [`Replicated::restore`] (a new host in place of the lost
/// one), and once the round's writers stopped [`Replicated::readmit`]
/// (so the next loss finds the store whole). Clients connect to
/// [`Replicated::endpoints`]: after a failover they reconnect there, and
/// only a client that reads every acknowledged write back judges the
/// store, never the store's own status.
pub trait Replicated {
    /// One line: the store, its layout and what a write waits for
    /// ("PostgreSQL 15.18, primary + synchronous standby").
    fn describe(&self) -> String;

    /// The hosts it runs on.
    fn hosts(&self) -> &Hosts;

    /// The hosts a loss may strike: those whose loss it is laid out to
    /// survive (every one, for a store that keeps each write on two).
    fn losable(&self) -> Vec<HostId>;

    /// Loses `host` ([`Hosts::lose`]), and notes it in the store's own
    /// bookkeeping (which host leads).
    fn lose(&mut self, host: HostId) -> Result<LostHost>;

    /// The store's own failover after the loss (PostgreSQL: `pg_ctl
    /// promote` on the standby when the primary was lost; a store whose
    /// survivors serve on: nothing). Returns when the store has done it,
    /// not when writes succeed again (the test measures that).
    fn fail_over(&mut self) -> Result<()>;

    /// Where clients connect now, the one that takes writes first (after
    /// a failover, the promoted host), each a host's address and port.
    fn endpoints(&self) -> Vec<SocketAddr>;

    /// A new host in place of the lost one, joined to the store, which is
    /// whole again when this returns (PostgreSQL: a new standby from
    /// `pg_basebackup` of the new primary, streaming).
    fn restore(&mut self) -> Result<()>;

    /// Once the round's clients have stopped: makes the store's own
    /// clients take the new host back, so that the next loss strikes a
    /// store whole as they see it, not one already short of a host. A
    /// store whose clients keep no memory of a host's failures does
    /// nothing (the default). Swift's proxy does: it skips a host for
    /// 60 s after its last error, in memory.
    fn readmit(&mut self) -> Result<()> {
        Ok(())
    }
}

/// The one line for a machine loss asked of a store that keeps one copy
/// (`what`: its name): there is no replica to fail over to.
pub fn no_replicas(what: &str) -> Error {
    Error::invalid(format!(
        "{what} keeps one copy on one host: a machine loss there loses everything, with no replica to fail over to; \
         choose a replicated configuration"
    ))
}
