//! What makes volatile state durable, and what a power cut keeps: fsync of
//! a file puts its pending changes (data and xattrs) on disk, fdatasync its
//! data only, fsync of a directory puts its namespace (and its own xattrs)
//! on disk, and a cut hands the pending changes to the model.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rand::rngs::SmallRng;

use super::fault::Op as FaultOp;
use super::model::{CutStats, Model};
use super::state::{Body, Pending, Res, Volatile};
use super::xattrs;

/// An I/O error of the backing directory becomes EIO for the program on
/// the mount, as a failing disk would.
fn disk_err(_: std::io::Error) -> i32 {
    libc::EIO
}

/// Applies changes, oldest first, to a file in the backing directory.
pub(super) fn apply_to_file(path: &Path, ops: &[Pending]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path)?;
    for op in ops {
        match op {
            Pending::Write { offset, data } => f.write_all_at(data, *offset)?,
            Pending::Truncate(len) => f.set_len(*len)?,
        }
    }
    f.seek(SeekFrom::End(0))?;
    f.flush()
}

/// Applies changes to an in-memory copy.
fn apply_to_vec(buf: &mut Vec<u8>, ops: &[Pending]) {
    for op in ops {
        match op {
            Pending::Write { offset, data } => {
                let end = *offset as usize + data.len();
                if buf.len() < end {
                    buf.resize(end, 0);
                }
                buf[*offset as usize..end].copy_from_slice(data);
            }
            Pending::Truncate(len) => buf.resize(*len as usize, 0),
        }
    }
}

impl Volatile {
    /// fsync(2) of a file: its data and its xattrs.
    pub fn fsync_file(&mut self, ino: u64) -> Res<()> {
        self.sync_file(ino, false)
    }

    /// fsync or fdatasync of a file: its pending data changes reach the
    /// disk (under its durable name, or kept aside until it has one), and
    /// with fsync its pending xattr changes too (fdatasync persists only
    /// what reading the data back needs; see `xattrs.rs`). With an injected
    /// fsync fault the data changes are dropped and EIO returned once, as
    /// Linux does since 4.13: the next fsync succeeds with the data lost.
    /// The xattr changes stay pending then (ext4 returns the writeback
    /// error before its journal commit, and the next fsync commits them).
    pub fn sync_file(&mut self, ino: u64, datasync: bool) -> Res<()> {
        self.alive()?;
        self.counters.fsyncs += 1;
        let path = self.disk_path(ino);
        let failed = self.faults.check(FaultOp::Fsync, &mut self.counters);
        let node = self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?;
        let Body::File { pending, orphan, .. } = &mut node.body else { return Ok(()) };
        let ops = std::mem::take(pending);
        failed?;
        match &path {
            Some(p) => apply_to_file(p, &ops).map_err(disk_err)?,
            None => apply_to_vec(orphan.get_or_insert_with(Vec::new), &ops),
        }
        if datasync {
            return Ok(());
        }
        self.sync_xattrs(ino)
    }

    /// A node's pending xattr changes reach the disk, or are kept aside
    /// until it has a durable name.
    fn sync_xattrs(&mut self, ino: u64) -> Res<()> {
        let path = self.disk_path(ino);
        let node = self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?;
        let changes = node.xattrs.take_pending();
        match path {
            Some(p) => xattrs::apply_to_path(&p, &changes).map_err(disk_err),
            None => {
                xattrs::apply_to_map(node.xattrs.orphan.get_or_insert_with(Default::default), &changes);
                Ok(())
            }
        }
    }

    /// fsync of a directory: its entries and its own xattrs.
    pub fn fsync_dir(&mut self, dir: u64) -> Res<()> {
        self.sync_dir(dir, false)
    }

    /// fsync or fdatasync of a directory: its entries on disk become what
    /// they are now. A file given a durable name here gets the content that reached the
    /// disk before (none if it was never synced: an empty file). A
    /// directory with no durable name yet keeps its synced entries aside,
    /// as a file keeps its synced content: they appear with it once its
    /// parent is synced (POSIX: fsync of a directory persists its entries,
    /// whether or not its own name is durable yet). The directory's own
    /// xattrs follow with fsync, not with fdatasync, as a file's do; the
    /// xattrs of the files it names are theirs to sync.
    pub fn sync_dir(&mut self, dir: u64, datasync: bool) -> Res<()> {
        self.alive()?;
        self.counters.dir_fsyncs += 1;
        let (entries, on_disk) = match &self.node(dir)?.body {
            Body::Dir { entries, on_disk } => (entries.clone(), on_disk.clone()),
            Body::File { .. } => return Err(libc::ENOTDIR),
        };
        if !datasync {
            self.sync_xattrs(dir)?;
        }
        let Some(dir_path) = self.disk_path(dir) else {
            if let Some(Body::Dir { on_disk, .. }) = self.nodes.get_mut(&dir).map(|n| &mut n.body) {
                *on_disk = entries;
            }
            return Ok(());
        };
        let gone: Vec<(OsString, u64)> =
            on_disk.iter().filter(|(n, i)| entries.get(*n) != Some(i)).map(|(n, &i)| (n.clone(), i)).collect();
        let added: Vec<(OsString, u64)> =
            entries.iter().filter(|(n, i)| on_disk.get(*n) != Some(i)).map(|(n, &i)| (n.clone(), i)).collect();
        // A node losing its durable name keeps its on-disk content aside.
        for (name, ino) in &gone {
            let here = Some((dir, name.clone()));
            if self.nodes.get(ino).is_some_and(|n| n.disk_name == here) {
                let p = dir_path.join(name);
                let node = self.nodes.get_mut(ino).ok_or(libc::ENOENT)?;
                if let Body::File { orphan, .. } = &mut node.body {
                    *orphan = Some(std::fs::read(&p).map_err(disk_err)?);
                }
                node.xattrs.orphan = Some(xattrs::read_from(&p).map_err(disk_err)?);
                node.disk_name = None;
            }
        }
        for (name, _) in &gone {
            let p = dir_path.join(name);
            let r = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            r.map_err(disk_err)?;
        }
        for (name, ino) in &added {
            self.give_disk_name(dir, &dir_path, name, *ino)?;
        }
        if let Some(Body::Dir { on_disk, .. }) = self.nodes.get_mut(&dir).map(|n| &mut n.body) {
            *on_disk = entries;
        }
        Ok(())
    }

    fn give_disk_name(&mut self, dir: u64, dir_path: &Path, name: &OsString, ino: u64) -> Res<()> {
        let p = dir_path.join(name);
        let elsewhere = self.disk_path(ino);
        let node = self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?;
        let synced_entries = match &mut node.body {
            Body::Dir { on_disk, .. } => {
                std::fs::create_dir(&p).map_err(disk_err)?;
                std::mem::take(on_disk)
            }
            Body::File { orphan, .. } => {
                let content = match (orphan.take(), &elsewhere) {
                    (Some(c), _) => c,
                    (None, Some(other)) => std::fs::read(other).map_err(disk_err)?,
                    (None, None) => Vec::new(),
                };
                std::fs::write(&p, content).map_err(disk_err)?;
                BTreeMap::new()
            }
        };
        // Its xattrs as synced: kept aside, on disk under its other name,
        // or none if they never were.
        let synced_xattrs = match (node.xattrs.orphan.take(), &elsewhere) {
            (Some(m), _) => m,
            (None, Some(other)) => xattrs::read_from(other).map_err(disk_err)?,
            (None, None) => xattrs::XattrMap::new(),
        };
        xattrs::replace_at(&p, &synced_xattrs).map_err(disk_err)?;
        node.disk_name = Some((dir, name.clone()));
        // A directory synced before it had a durable name: what it held then.
        for (child_name, child) in &synced_entries {
            self.give_disk_name(ino, &p, child_name, *child)?;
        }
        if let Some(Body::Dir { on_disk, .. }) = self.nodes.get_mut(&ino).map(|n| &mut n.body) {
            *on_disk = synced_entries;
        }
        Ok(())
    }

    /// The power cut: the model decides what of the pending changes reached
    /// the disk; everything else is gone, and every later request fails.
    pub fn cut(&mut self, model: Model, rng: &mut SmallRng) -> std::io::Result<CutStats> {
        self.dead = true;
        let mut stats = CutStats::default();
        let mut inos: Vec<u64> = self.nodes.keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            let path = self.disk_path(ino);
            let Some(node) = self.nodes.get_mut(&ino) else { continue };
            let xattr_changes = node.xattrs.take_pending();
            if let Body::File { pending, .. } = &mut node.body {
                let ops = std::mem::take(pending);
                stats.pending_writes += ops.iter().filter(|o| matches!(o, Pending::Write { .. })).count() as u64;
                // A file with no durable name is unreachable after the cut.
                if let Some(p) = &path {
                    let landed = model.what_lands(&ops, rng, &mut stats);
                    if !landed.is_empty() {
                        apply_to_file(p, &landed)?;
                    }
                }
            }
            // Only a node with xattr changes draws from the generator, so
            // seeded cuts of datasets without xattrs land as they did.
            if let (Some(p), false) = (&path, xattr_changes.is_empty()) {
                let landing = model.xattr_changes_landing(xattr_changes.len(), rng);
                xattrs::apply_to_path(p, &xattr_changes[..landing])?;
            }
        }
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fault::FaultPlan;
    use super::super::state::ROOT;
    use super::*;
    use rand::SeedableRng;
    use std::ffi::OsStr;

    fn setup() -> (tempfile::TempDir, Volatile) {
        let disk = tempfile::tempdir().unwrap();
        std::fs::write(disk.path().join("a"), b"version 1").unwrap();
        let v = Volatile::load(disk.path(), FaultPlan::none()).unwrap();
        (disk, v)
    }

    #[test]
    fn strict_cut_keeps_only_what_was_synced() {
        let (disk, mut v) = setup();
        let a = v.lookup(ROOT, OsStr::new("a")).unwrap();
        v.set_size(a, 0).unwrap();
        v.write(a, 0, b"version 2").unwrap();
        v.fsync_file(a).unwrap();
        v.write(a, 0, b"VERSION 3").unwrap();
        let b = v.create(ROOT, OsStr::new("b"), 0o644, 0, 0, false).unwrap();
        v.write(b, 0, b"new file").unwrap();
        v.fsync_file(b).unwrap();
        v.cut(Model::Strict, &mut SmallRng::seed_from_u64(1)).unwrap();
        assert_eq!(std::fs::read(disk.path().join("a")).unwrap(), b"version 2");
        assert!(!disk.path().join("b").exists(), "fsync of the file does not make its name durable");
        assert_eq!(v.read(a, 0, 10), Err(libc::EIO), "the machine is off");
    }

    #[test]
    fn a_directory_synced_before_its_parent_keeps_its_entries() {
        let (disk, mut v) = setup();
        let d = v.create(ROOT, OsStr::new("d"), 0o755, 0, 0, true).unwrap();
        let e = v.create(d, OsStr::new("e"), 0o755, 0, 0, true).unwrap();
        let f = v.create(e, OsStr::new("f"), 0o644, 0, 0, false).unwrap();
        v.write(f, 0, b"synced").unwrap();
        v.fsync_file(f).unwrap();
        v.fsync_dir(e).unwrap();
        v.fsync_dir(d).unwrap();
        let late = v.create(d, OsStr::new("late"), 0o644, 0, 0, false).unwrap();
        v.fsync_file(late).unwrap();
        v.fsync_dir(ROOT).unwrap();
        v.cut(Model::Strict, &mut SmallRng::seed_from_u64(1)).unwrap();
        assert_eq!(std::fs::read(disk.path().join("d/e/f")).unwrap(), b"synced", "each fsync'd level persisted");
        assert!(!disk.path().join("d/late").exists(), "created after d's fsync");
    }

    #[test]
    fn directory_fsync_makes_renames_and_unlinks_durable() {
        let (disk, mut v) = setup();
        let t = v.create(ROOT, OsStr::new("a.tmp"), 0o644, 0, 0, false).unwrap();
        v.write(t, 0, b"version 2").unwrap();
        v.fsync_file(t).unwrap();
        v.rename(ROOT, OsStr::new("a.tmp"), ROOT, OsStr::new("a"), false).unwrap();
        let u = v.create(ROOT, OsStr::new("unsynced"), 0o644, 0, 0, false).unwrap();
        v.write(u, 0, b"never synced").unwrap();
        v.fsync_dir(ROOT).unwrap();
        assert_eq!(std::fs::read(disk.path().join("a")).unwrap(), b"version 2");
        assert_eq!(std::fs::read(disk.path().join("unsynced")).unwrap(), b"", "a durable name, no durable data");
        v.unlink(ROOT, OsStr::new("a"), false).unwrap();
        v.write(t, 0, b"VERSION 3").unwrap();
        v.fsync_file(t).unwrap();
        assert_eq!(std::fs::read(disk.path().join("a")).unwrap(), b"VERSION 3", "still named on disk");
        v.fsync_dir(ROOT).unwrap();
        assert!(!disk.path().join("a").exists());
        v.cut(Model::Strict, &mut SmallRng::seed_from_u64(1)).unwrap();
        let left: Vec<_> = std::fs::read_dir(disk.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["unsynced"]);
    }
}

/// The xattrs' durability rules (`xattrs.rs`), without a mount.
#[cfg(test)]
mod xattr_tests {
    use super::super::fault::FaultPlan;
    use super::super::state::ROOT;
    use super::xattrs::read_from;
    use super::*;
    use rand::SeedableRng;
    use std::ffi::OsStr;

    fn on_disk(path: &Path) -> Vec<(String, String)> {
        let map = read_from(path).unwrap();
        map.into_iter().map(|(n, v)| (n.into_string().unwrap(), String::from_utf8(v).unwrap())).collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    fn setup() -> (tempfile::TempDir, Volatile) {
        let disk = tempfile::tempdir().unwrap();
        std::fs::write(disk.path().join("a"), b"data").unwrap();
        xattr::set(disk.path().join("a"), "user.old", b"0").unwrap();
        let v = Volatile::load(disk.path(), FaultPlan::none()).unwrap();
        (disk, v)
    }

    #[test]
    fn an_xattr_change_survives_a_cut_only_after_the_files_fsync() {
        let (disk, mut v) = setup();
        let a = v.lookup(ROOT, OsStr::new("a")).unwrap();
        assert_eq!(v.get_xattr(a, OsStr::new("user.old")), Ok(&b"0"[..]), "loaded from the disk");
        v.set_xattr(a, OsStr::new("user.new"), b"1", 0).unwrap();
        v.sync_file(a, true).unwrap();
        v.fsync_dir(ROOT).unwrap();
        assert_eq!(on_disk(&disk.path().join("a")), pairs(&[("user.old", "0")]), "fdatasync and the dir's fsync: no");
        v.fsync_file(a).unwrap();
        assert_eq!(on_disk(&disk.path().join("a")), pairs(&[("user.new", "1"), ("user.old", "0")]));
        v.set_xattr(a, OsStr::new("user.after"), b"2", 0).unwrap();
        v.remove_xattr(a, OsStr::new("user.old")).unwrap();
        assert_eq!(v.list_xattrs(a, false).unwrap(), b"user.after\0user.new\0", "programs see changes at once");
        v.cut(Model::Strict, &mut SmallRng::seed_from_u64(1)).unwrap();
        assert_eq!(on_disk(&disk.path().join("a")), pairs(&[("user.new", "1"), ("user.old", "0")]));
    }

    #[test]
    fn xattrs_synced_before_the_name_land_with_it() {
        let (disk, mut v) = setup();
        // An object server's PUT without O_TMPFILE: a temporary file in tmp/, xattrs,
        // fsync, rename into place, fsync of the object's directory.
        let tmp = v.create(ROOT, OsStr::new("tmp"), 0o755, 0, 0, true).unwrap();
        let objs = v.create(ROOT, OsStr::new("objects"), 0o755, 0, 0, true).unwrap();
        v.fsync_dir(ROOT).unwrap();
        let t = v.create(tmp, OsStr::new("tmpXYZ"), 0o600, 0, 0, false).unwrap();
        v.write(t, 0, b"body").unwrap();
        v.set_xattr(t, OsStr::new("user.object.metadata"), b"pickle", 0).unwrap();
        v.fsync_file(t).unwrap();
        v.rename(tmp, OsStr::new("tmpXYZ"), objs, OsStr::new("1.data"), false).unwrap();
        v.set_xattr(t, OsStr::new("user.late"), b"x", 0).unwrap();
        v.fsync_dir(objs).unwrap();
        // A name made durable without the file's fsync: no xattrs, as no data.
        let n = v.create(objs, OsStr::new("2.data"), 0o600, 0, 0, false).unwrap();
        v.set_xattr(n, OsStr::new("user.object.metadata"), b"unsynced", 0).unwrap();
        v.fsync_dir(objs).unwrap();
        v.cut(Model::Strict, &mut SmallRng::seed_from_u64(1)).unwrap();
        let one = disk.path().join("objects/1.data");
        assert_eq!(std::fs::read(&one).unwrap(), b"body");
        assert_eq!(on_disk(&one), pairs(&[("user.object.metadata", "pickle")]));
        assert_eq!(on_disk(&disk.path().join("objects/2.data")), pairs(&[]));
        assert!(!disk.path().join("tmp/tmpXYZ").exists());
    }

    #[test]
    fn a_renamed_over_file_keeps_its_xattrs_until_the_directory_is_synced() {
        let (disk, mut v) = setup();
        let b = v.create(ROOT, OsStr::new("b"), 0o644, 0, 0, false).unwrap();
        v.set_xattr(b, OsStr::new("user.b"), b"b", 0).unwrap();
        v.fsync_file(b).unwrap();
        v.rename(ROOT, OsStr::new("a"), ROOT, OsStr::new("c"), false).unwrap();
        v.fsync_dir(ROOT).unwrap();
        assert_eq!(on_disk(&disk.path().join("c")), pairs(&[("user.old", "0")]), "moved with its name");
        assert_eq!(on_disk(&disk.path().join("b")), pairs(&[("user.b", "b")]));
        v.unlink(ROOT, OsStr::new("c"), false).unwrap();
        v.fsync_dir(ROOT).unwrap();
        v.rename(ROOT, OsStr::new("b"), ROOT, OsStr::new("d"), false).unwrap();
        v.create(ROOT, OsStr::new("b"), 0o644, 0, 0, false).unwrap();
        v.fsync_dir(ROOT).unwrap();
        assert_eq!(on_disk(&disk.path().join("d")), pairs(&[("user.b", "b")]));
        assert_eq!(on_disk(&disk.path().join("b")), pairs(&[]), "a new file under an old name has none");
    }

    #[test]
    fn a_directorys_own_xattrs_follow_its_fsync() {
        let (disk, mut v) = setup();
        let d = v.create(ROOT, OsStr::new("d"), 0o755, 0, 0, true).unwrap();
        v.set_xattr(d, OsStr::new("user.dir"), b"1", 0).unwrap();
        v.fsync_dir(d).unwrap();
        v.fsync_dir(ROOT).unwrap();
        assert_eq!(on_disk(&disk.path().join("d")), pairs(&[("user.dir", "1")]), "synced before its name");
        v.set_xattr(ROOT, OsStr::new("user.root"), b"r", 0).unwrap();
        v.sync_dir(ROOT, true).unwrap();
        assert_eq!(on_disk(disk.path()), pairs(&[]), "not by fdatasync");
        v.fsync_dir(ROOT).unwrap();
        assert_eq!(on_disk(disk.path()), pairs(&[("user.root", "r")]));
    }

    #[test]
    fn a_failed_fsync_drops_the_data_and_keeps_the_xattr_changes_pending() {
        let disk = tempfile::tempdir().unwrap();
        std::fs::write(disk.path().join("a"), b"old").unwrap();
        let mut v = Volatile::load(disk.path(), FaultPlan::parse("fsync-eio", 1).unwrap()).unwrap();
        let a = v.lookup(ROOT, OsStr::new("a")).unwrap();
        v.write(a, 0, b"new").unwrap();
        v.set_xattr(a, OsStr::new("user.x"), b"1", 0).unwrap();
        assert_eq!(v.fsync_file(a), Err(libc::EIO));
        assert_eq!(on_disk(&disk.path().join("a")), pairs(&[]));
        v.fsync_file(a).unwrap();
        assert_eq!(std::fs::read(disk.path().join("a")).unwrap(), b"old", "the data was dropped");
        assert_eq!(on_disk(&disk.path().join("a")), pairs(&[("user.x", "1")]), "committed by the next fsync");
    }

    #[test]
    fn torn_models_land_a_prefix_of_the_changes_and_strict_none() {
        let mut landed = Vec::new();
        for seed in 0..12 {
            let (disk, mut v) = setup();
            let a = v.lookup(ROOT, OsStr::new("a")).unwrap();
            for k in 0..8 {
                v.set_xattr(a, OsStr::new(&format!("user.k{k}")), b"v", 0).unwrap();
            }
            v.cut(Model::Torn { sector: 4096 }, &mut SmallRng::seed_from_u64(seed)).unwrap();
            let names: Vec<String> = on_disk(&disk.path().join("a")).into_iter().map(|p| p.0).collect();
            let n = names.len() - 1;
            let prefix: Vec<String> =
                (0..n).map(|k| format!("user.k{k}")).chain(std::iter::once("user.old".into())).collect();
            assert_eq!(names, prefix, "seed {seed}: a prefix, oldest first");
            landed.push(n);
        }
        assert!(landed.iter().any(|&n| n > 0 && n < 8), "some cuts land part of the changes: {landed:?}");
        let (disk, mut v) = setup();
        let a = v.lookup(ROOT, OsStr::new("a")).unwrap();
        v.set_xattr(a, OsStr::new("user.k0"), b"v", 0).unwrap();
        v.cut(Model::Strict, &mut SmallRng::seed_from_u64(0)).unwrap();
        assert_eq!(on_disk(&disk.path().join("a")), pairs(&[("user.old", "0")]));
    }
}
