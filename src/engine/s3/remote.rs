//! Exporting to a store the user runs (`--s3 URL --s3-bucket B`), where
//! blobbench writes only under a new prefix of the export's own and never
//! makes or deletes a bucket.
//!
//! Before its first PUT the export records its descriptor in DIR, marked
//! incomplete (with the datasets `--force` replaces), so that one killed
//! by SIGKILL is found by `drop DIR`, and `run` refuses it. A bucket that
//! keeps versions is refused unless `--s3-versioned-ok`. Once every blob
//! is stored the descriptor is written whole, and only then are the
//! replaced datasets' objects deleted, through the checked path of
//! [`remove`]. A build that fails or is interrupted (Ctrl-C, checked at
//! every blob) deletes what it wrote, through the same path, and says so;
//! a clean-up that fails is named with the command that finishes it.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::client::{Client, Store};
use super::descriptor::{self, Descriptor, Expect};
use super::fill::fill;
use super::kind::KIND;
use super::listing::check_versioning;
use super::lock::{DatasetLock, Holding};
use super::reach::user_store;
use super::remove::{remove_dataset, OnCtrlC};
use crate::engine::kv;
use crate::engine::report::ExportReport;
use crate::records::{Addressing, S3Params};
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Builds the dataset at `target` in `bucket` at `url`.
pub fn build_remote(
    db: &Path,
    target: &Path,
    force: bool,
    (url, bucket, s3): (&str, &str, &S3Params),
    progress: &dyn Progress,
) -> Result<ExportReport> {
    let started = Instant::now();
    let store = user_store(url, bucket, s3)?;
    let desc = Descriptor { profile: store.source_profile(), ..remote_descriptor(target, url, bucket, s3)? };
    let store = Arc::new(store.within(&desc.prefix));
    // Checks the target only: the descriptor is written in place.
    drop(kv::stage(KIND, target, force, descriptor::detect)?);
    replaced(target, previous(target, force)?)?;
    let client = Client::new(store.clone());
    if client.any_under(&desc.prefix)? {
        return Err(Error::bad_input(
            &store.label,
            format!("{} already holds objects (an id drawn twice); export again for a new one", desc.prefix),
        ));
    }
    check_versioning(&client, s3.versioned_ok)?;
    let record = Record::begin(target, force, &desc)?;
    let filled = fill(&store, &desc, db, s3.multipart_threshold, progress).map_err(|e| record.failed(e, &store))?;
    let done = record.finish()?;
    retire(target, &done, s3)?;
    Ok(filled.report(started, Some(format!("bucket {bucket} at {}, prefix {}", store.label.display(), desc.prefix))))
}

/// The descriptor `--force` replaces at `target` (None without it, or
/// when there is none), refused when it is a throwaway server's.
fn previous(target: &Path, force: bool) -> Result<Option<Descriptor>> {
    let old =
        if force && target.join(descriptor::DESCRIPTOR).is_file() { Some(Descriptor::read(target)?) } else { None };
    if old.as_ref().is_some_and(Descriptor::local) {
        return Err(Error::bad_input(
            target,
            "holds a dataset on a throwaway server: drop it first (blobbench drop DIR), then export to --s3",
        ));
    }
    Ok(old)
}

/// A new export's descriptor on a store the user runs, keeping the CA file
/// (absolute: `drop` may run elsewhere) and addressing it was reached with.
fn remote_descriptor(target: &Path, url: &str, bucket: &str, s3: &S3Params) -> Result<Descriptor> {
    let ca = match &s3.ca {
        Some(ca) => Some(std::path::absolute(ca).map_err(|e| Error::io(ca, "--s3-ca: cannot resolve", e))?),
        None => None,
    };
    let addressing = (s3.addressing != Addressing::Auto).then_some(s3.addressing);
    Ok(Descriptor { ca, addressing, ..Descriptor::new_export(target, bucket, Some(url), None) })
}

/// The datasets of a store the user runs that `--force` replaces at
/// `target`, `old` being its descriptor: it and those it replaced in turn
/// (an export killed while replacing them). A dataset written before ids
/// is refused: its prefix may hold another dataset of the same name too,
/// so only `drop` of it, once its marker is read, deletes it.
pub(super) fn replaced(target: &Path, old: Option<Descriptor>) -> Result<Vec<Descriptor>> {
    let Some(old) = old else { return Ok(Vec::new()) };
    let mut all = old.replaces.clone();
    if !old.local() {
        all.insert(0, Descriptor { incomplete: false, replaces: Vec::new(), ..old });
    }
    match all.iter().find(|d| d.id.is_none()) {
        Some(pre_id) => Err(Error::bad_input(
            target,
            format!(
                "holds a dataset exported before ids, whose prefix {} another dataset of that name may share: \
                 drop it first (blobbench drop DIR reads its marker), then export again",
                pre_id.prefix
            ),
        )),
        None => Ok(all),
    }
}

/// Deletes the objects of the datasets `desc`, just written at `target`,
/// replaces, each reached as its own export reached it (its store, CA
/// file, addressing and profile; the new export's CA only for the same
/// endpoint and a descriptor that kept none). Each one retired leaves the
/// descriptor; one that is not stays named there, so `drop DIR` (or
/// another `export --force`) finishes it.
pub(super) fn retire(target: &Path, desc: &Descriptor, s3: &S3Params) -> Result<()> {
    let mut left = desc.replaces.clone();
    while let Some(old) = left.first().cloned() {
        let removed = user_store(old.endpoint.as_deref().unwrap_or_default(), &old.bucket, &reaching(&old, s3))
            .and_then(|store| {
                let store = Arc::new(store.within(&old.prefix));
                remove_dataset(&store, &old.prefix, Expect::Export(old.id.as_deref()), OnCtrlC::Stop)
            });
        if let Err(e) = removed {
            return Err(Error::invalid(format!(
                "{dir} holds the new export, but the replaced one's objects under {} were not all removed ({e}); \
                 {dir}'s descriptor still names them: blobbench drop {dir} or another export --force removes them, \
                 or alone, {}",
                old.prefix,
                finish_with(&old),
                dir = target.display(),
            )));
        }
        left.remove(0);
        Descriptor { replaces: left.clone(), ..desc.clone() }.write(target)?;
    }
    Ok(())
}

/// How a replaced dataset's store is reached: as its descriptor says.
fn reaching(old: &Descriptor, s3: &S3Params) -> S3Params {
    let same_store = s3.url.as_deref().map(|u| u.trim_end_matches('/')) == old.endpoint.as_deref();
    let ca = old.ca.clone().or_else(|| s3.ca.clone().filter(|_| same_store));
    S3Params { ca, addressing: old.addressing.unwrap_or_default(), profile: old.profile.clone(), ..s3.clone() }
}

/// The command that removes what is left of a dataset's prefix.
pub(super) fn finish_with(desc: &Descriptor) -> String {
    let endpoint = desc.endpoint.as_deref().unwrap_or("URL");
    let command = drop_prefix_command(endpoint, &desc.bucket, &desc.prefix, desc.ca.as_deref(), desc.addressing);
    let profile = desc.profile.as_deref().map(|p| format!("AWS_PROFILE={p} ")).unwrap_or_default();
    format!("finish with: {profile}{command}")
}

/// `blobbench drop --prefix`, with the CA file and addressing that reach
/// the store when they are not the defaults.
pub(super) fn drop_prefix_command(
    endpoint: &str,
    bucket: &str,
    prefix: &str,
    ca: Option<&Path>,
    addressing: Option<Addressing>,
) -> String {
    let mut line = format!("blobbench drop --s3 {endpoint} --s3-bucket {bucket} --prefix {prefix}");
    if let Some(ca) = ca {
        line.push_str(&format!(" --s3-ca {}", ca.display()));
    }
    match addressing {
        Some(Addressing::Path) => line.push_str(" --s3-addressing path"),
        Some(Addressing::Virtual) => line.push_str(" --s3-addressing virtual"),
        Some(Addressing::Auto) | None => {}
    }
    line
}

/// The export recorded in its directory while it runs, under the
/// directory's lock (held until it returns: its retirements too).
struct Record<'a> {
    target: &'a Path,
    desc: &'a Descriptor,
    /// The directory's descriptor before (None: there was none).
    old: Option<Descriptor>,
    /// Whether the export made the directory.
    made: bool,
    lock: Option<Arc<DatasetLock>>,
}

impl<'a> Record<'a> {
    /// Takes `target`'s lock (making the directory first when there is
    /// none), reads what it holds now that no other export or drop can
    /// change it, and writes `desc` there, incomplete and naming what it
    /// replaces.
    fn begin(target: &'a Path, force: bool, desc: &'a Descriptor) -> Result<Self> {
        let made = match std::fs::create_dir(target) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(Error::io(target, "cannot create", e)),
        };
        let mut record = Record { target, desc, old: None, made, lock: None };
        let begun = (|| {
            record.lock = DatasetLock::take(target, Holding::Export)?;
            if !force && target.join(descriptor::DESCRIPTOR).is_file() {
                return Err(Error::bad_input(target, "is not empty (use --force to replace a previous s3 dataset)"));
            }
            record.old = previous(target, force)?;
            let replaced = replaced(target, record.old.clone())?;
            Descriptor { incomplete: true, replaces: replaced, ..desc.clone() }.write(target)
        })();
        match begun {
            Ok(()) => Ok(record),
            Err(e) => {
                if made {
                    record.remove_made();
                }
                Err(e)
            }
        }
    }

    /// The export stored every blob: its descriptor, whole, still naming
    /// the datasets it replaces until each is retired.
    fn finish(self) -> Result<Descriptor> {
        let replaces = replaced(self.target, self.old.clone())?;
        let done = Descriptor { replaces, ..self.desc.clone() };
        done.write(self.target)?;
        Ok(done)
    }

    /// `e`, once the objects the failed export wrote are deleted and the
    /// directory is as it was, saying so; or, when that clean-up failed
    /// too, naming how to finish it, the prefix kept in the descriptor for
    /// `drop DIR` (the one it wrote, or the old one's, which then replaces
    /// it).
    fn failed(&self, e: Error, store: &Arc<Store>) -> Error {
        let desc = self.desc;
        let what = format!("under {} in bucket {}", desc.prefix, desc.bucket);
        let expect = Expect::Export(desc.id.as_deref());
        match (remove_dataset(store, &desc.prefix, expect, OnCtrlC::Finish), e) {
            (Ok(r), Error::Interrupted) => {
                self.undo();
                Error::invalid(format!("interrupted: removed the {} objects written {what}", r.objects))
            }
            (Ok(r), e) => {
                self.undo();
                Error::invalid(format!("{e} (removed the {} objects written {what})", r.objects))
            }
            (Err(rm), e) => {
                let kept = match &self.old {
                    Some(old) => {
                        let failed = Descriptor { incomplete: false, replaces: Vec::new(), ..desc.clone() };
                        let mut replaces = old.replaces.clone();
                        replaces.push(failed);
                        Descriptor { replaces, ..old.clone() }.write(self.target)
                    }
                    None => Ok(()),
                };
                let dir = self.target.display();
                let how = match kept {
                    Ok(()) => format!("{dir}'s descriptor names them: finish with: blobbench drop {dir}"),
                    Err(_) => finish_with(desc),
                };
                Error::invalid(format!("{e}; removing the objects written {what} failed too ({rm}); {how}"))
            }
        }
    }

    /// Puts the directory back as it was before the export.
    fn undo(&self) {
        match &self.old {
            Some(old) => _ = old.write(self.target),
            None => {
                _ = std::fs::remove_file(self.target.join(descriptor::DESCRIPTOR));
                if self.made {
                    self.remove_made();
                }
            }
        }
    }

    /// Removes the directory the export made (its lock's file first).
    fn remove_made(&self) {
        if let Some(lock) = &self.lock {
            _ = lock.remove_file();
        }
        _ = std::fs::remove_dir(self.target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn old(endpoint: &str) -> Descriptor {
        let d = Descriptor::new_export(Path::new("/x/old"), "b", Some(endpoint), None);
        Descriptor { ca: Some("/old/ca.pem".into()), addressing: Some(Addressing::Path), ..d }
    }

    /// Issue 43, item 1: the dataset `--force` replaces is reached as its
    /// own export reached it, not with the new export's CA and addressing.
    #[test]
    fn a_replaced_dataset_is_reached_as_its_own_export_was() {
        let new = S3Params {
            url: Some("https://new:9000".into()),
            ca: Some("/new/ca.pem".into()),
            addressing: Addressing::Virtual,
            ..S3Params::default()
        };
        let p = reaching(&old("https://old:9000"), &new);
        assert_eq!((p.ca.as_deref(), p.addressing), (Some(Path::new("/old/ca.pem")), Addressing::Path));
        let kept_none = Descriptor { ca: None, addressing: None, ..old("https://old:9000") };
        let p = reaching(&kept_none, &new);
        assert_eq!((p.ca, p.addressing), (None, Addressing::Auto), "another store: not the new export's CA");
        let same_store = Descriptor { ca: None, addressing: None, ..old("https://new:9000") };
        assert_eq!(reaching(&same_store, &new).ca.as_deref(), Some(Path::new("/new/ca.pem")), "the same store");
        // Issue 50: with the profile it was exported with, not the new one's.
        let profiled = Descriptor { profile: Some("old".into()), ..old("https://old:9000") };
        let new = S3Params { profile: Some("new".into()), ..new };
        assert_eq!(reaching(&profiled, &new).profile.as_deref(), Some("old"));
        assert!(finish_with(&profiled).starts_with("finish with: AWS_PROFILE=old blobbench drop --s3 https://old:9000"));
    }

    /// Issue 43, item 11: the command that finishes a clean-up reaches the
    /// store as the export did.
    #[test]
    fn the_finishing_command_carries_the_ca_and_addressing() {
        let d = old("https://old:9000");
        let line = finish_with(&d);
        assert!(
            line.starts_with("finish with: blobbench drop --s3 https://old:9000 --s3-bucket b --prefix blobbench/old-"),
            "{line}"
        );
        assert!(line.ends_with(" --s3-ca /old/ca.pem --s3-addressing path"), "{line}");
        let plain = Descriptor { ca: None, addressing: None, ..d };
        assert!(finish_with(&plain).ends_with(&plain.prefix), "{}", finish_with(&plain));
    }

    /// Issue 43, item 1: `--force` never deletes a prefix written before
    /// ids (another dataset of that name may share it), and a replaced
    /// dataset's own replacements are retired with it.
    #[test]
    fn force_refuses_a_dataset_from_before_ids_and_retires_what_an_unfinished_one_replaced() {
        let t = Path::new("/x/t");
        let pre_id = Descriptor { id: None, prefix: "blobbench/t/".into(), ..old("http://h") };
        let e = replaced(t, Some(pre_id.clone())).unwrap_err().to_string();
        assert!(e.contains("exported before ids") && e.contains("blobbench/t/") && e.contains("drop it first"), "{e}");
        let (a, b) = (old("http://h"), old("http://h"));
        let unfinished = Descriptor { incomplete: true, replaces: vec![b.clone()], ..a.clone() };
        let all = replaced(t, Some(unfinished)).unwrap();
        assert_eq!(all.iter().map(|d| d.prefix.as_str()).collect::<Vec<_>>(), [a.prefix.as_str(), b.prefix.as_str()]);
        assert!(all.iter().all(|d| !d.incomplete && d.replaces.is_empty()));
        let behind = Descriptor { replaces: vec![pre_id], ..a };
        assert!(replaced(t, Some(behind)).is_err(), "a replacement from before ids, too");
        assert!(replaced(t, None).unwrap().is_empty());
    }
}
