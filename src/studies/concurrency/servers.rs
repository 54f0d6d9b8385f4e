//! Server stores under parallel clients (`concurrency --engines`): an
//! embedded store is read by threads of one process and tops out with the
//! cores, while a server (PostgreSQL, an S3 object store) answers many
//! clients at once, so each server named is read by 1 to 16 clients (a
//! thread each, with its own connection), the servers the arms of one set
//! of interleaved rounds per client count. The dataset is the blob
//! readers' (kvtest blobs of 10,000 bytes), built into each server once.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::blobs::{self, BlobPoint, BLOB_SIZE};
use super::ids::{self, StoreId};
use super::options::Concurrency;
use crate::drivers::parallel_read::ParallelArm;
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundSet, StopReason};
use crate::measure::{stop_requested, Experiment};
use crate::records::{EngineKind, EngineSettings};
use crate::util::progress::{Progress, Silent};
use crate::{Error, Result};

/// Clients reading each server at once.
pub const SERVER_CLIENTS: [u32; 5] = [1, 2, 4, 8, 16];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerClients {
    pub blobs: u32,
    pub blob_size: u32,
    /// Reads per timed run, all clients together, in kvtest's random order.
    pub reads_per_run: u64,
    /// One per server and client count: `store` is the engine,
    /// `threads` the clients.
    pub points: Vec<BlobPoint>,
}

impl ServerClients {
    /// `store`'s reads per second at `clients` over its one client's
    /// (None when either is missing).
    pub fn scaling(&self, store: StoreId, clients: u32) -> Option<f64> {
        let rate = |c: u32| self.points.iter().find(|p| p.store == store && p.threads == c).map(|p| p.reads_per_s);
        let one = rate(1).filter(|&r| r > 0.0)?;
        Some(rate(clients)? / one)
    }

    /// The servers measured, in the order they were named.
    pub fn stores(&self) -> Vec<StoreId> {
        ids::stores_in_order(self.points.iter().map(|p| p.store))
    }
}

/// What the servers' section measured: the section, its experiments and
/// its rounds (one set per client count), for the result file.
pub struct Measured {
    pub clients: ServerClients,
    pub experiments: Vec<Experiment>,
    pub rounds: Vec<RoundSet>,
}

/// Refuses before any work what is not a server, or a server that cannot
/// run here (its programs missing), each in one line.
pub fn preflight(servers: &[EngineKind], settings: &EngineSettings) -> Result<()> {
    for &kind in servers {
        if !kind.is_server() {
            return Err(Error::invalid(format!(
                "--engines: {} is not a server store (concurrency reads servers by many clients: {})",
                kind.name(),
                server_names().join(", ")
            )));
        }
        crate::engine::registry::backend(kind).preflight(settings, None)?;
    }
    Ok(())
}

/// The server engines' names.
pub fn server_names() -> Vec<&'static str> {
    crate::engine::registry::key_value_kinds().into_iter().filter(|k| k.is_server()).map(EngineKind::name).collect()
}

/// Builds every server's dataset in `work` (from the blob readers'
/// database, made here when that section did not run) and reads each by
/// [`SERVER_CLIENTS`] clients. Ctrl-C keeps the client counts measured.
pub fn measure(opts: &Concurrency, work: &Path, progress: &dyn Progress) -> Result<Measured> {
    let db = blobs::readers_db(opts, work)?;
    let mut sets: Vec<(EngineKind, PathBuf)> = Vec::with_capacity(opts.servers().len());
    for (nth, &kind) in opts.servers().iter().enumerate() {
        let dir = work.join(format!("s{nth}"));
        crate::engine::registry::build_with(kind, &db, &dir, false, &opts.ctx.settings, &Silent)?;
        sets.push((kind, dir));
    }
    let mut out = Measured {
        clients: ServerClients {
            blobs: opts.blob_count,
            blob_size: BLOB_SIZE,
            reads_per_run: opts.server_reads,
            points: Vec::new(),
        },
        experiments: Vec::new(),
        rounds: Vec::new(),
    };
    for clients in SERVER_CLIENTS {
        if stop_requested() {
            break;
        }
        match one_count(opts, &sets, clients) {
            Err(Error::Interrupted) => break,
            Err(e) => return Err(e),
            Ok((measured, set)) => {
                for (point, e) in measured {
                    out.clients.points.push(point);
                    out.experiments.push(e);
                }
                out.rounds.push(set);
            }
        }
        progress.advance(1);
    }
    Ok(out)
}

/// Every server read by `clients` clients, as the arms of one set of
/// rounds (the first server against the others when there are several).
fn one_count(
    opts: &Concurrency,
    sets: &[(EngineKind, PathBuf)],
    clients: u32,
) -> Result<(Vec<(BlobPoint, Experiment)>, RoundSet)> {
    let mut arms = Vec::with_capacity(sets.len());
    for (_, path) in sets {
        let mut run = blobs::run_options(opts, path, 0);
        run.count = opts.server_reads.max(u64::from(clients));
        arms.push(ParallelArm::prepare(&run, clients)?);
    }
    let ids: Vec<String> =
        sets.iter().map(|(kind, _)| ids::reader_experiment(StoreId::Engine(*kind), clients)).collect();
    let pairs: Vec<Comparison> =
        if sets.len() > 1 { vec![Comparison { a: vec![0], b: (1..sets.len()).collect() }] } else { Vec::new() };
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let out = run_rounds(&ids::servers_rounds(clients), &ids, &mut dyn_arms, &opts.rounds, &pairs, &mut |_, _| {})?;
    if out.set.stop == StopReason::Interrupted {
        return Err(Error::Interrupted);
    }
    let mut measured = Vec::with_capacity(sets.len());
    for (((kind, _), arm), (m, id)) in sets.iter().zip(arms).zip(out.measured.into_iter().zip(&ids)) {
        let label = format!("{}, a connection per client", kind.title());
        let e = arm.finish(id, &format!("{label}, {clients} client(s)"), m)?.experiment;
        measured.push((blobs::point_of(StoreId::Engine(*kind), &label, clients, &e), e));
    }
    Ok((measured, out.set))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(kind: EngineKind, threads: u32, reads_per_s: f64) -> BlobPoint {
        let store = StoreId::Engine(kind);
        BlobPoint {
            store,
            label: store.to_string(),
            threads,
            experiment_id: ids::reader_experiment(store, threads),
            mb_per_s: 0.0,
            reads_per_s,
            latency: None,
            noisy: false,
            cpu_us_per_read: 0.0,
            cores_used: 0.0,
            writes_per_s: None,
        }
    }

    #[test]
    fn scaling_is_over_one_client_and_stores_keep_their_order() {
        let c = ServerClients {
            blobs: 1,
            blob_size: 1,
            reads_per_run: 1,
            points: vec![
                point(EngineKind::S3, 1, 50.0),
                point(EngineKind::S3, 4, 120.0),
                point(EngineKind::Postgres, 1, 0.0),
            ],
        };
        let (s3, pg) = (StoreId::Engine(EngineKind::S3), StoreId::Engine(EngineKind::Postgres));
        assert_eq!(c.scaling(s3, 4), Some(2.4));
        assert_eq!(c.scaling(s3, 8), None, "not measured");
        assert_eq!(c.scaling(pg, 1), None, "no rate at one client");
        assert_eq!(c.stores(), [s3, pg]);
    }

    #[test]
    fn only_servers_are_accepted() {
        let err =
            preflight(&[EngineKind::ALL.into_iter().find(|k| !k.is_server()).unwrap()], &EngineSettings::default())
                .unwrap_err();
        assert!(err.to_string().contains("is not a server store") && err.to_string().contains("s3"), "{err}");
    }
}
