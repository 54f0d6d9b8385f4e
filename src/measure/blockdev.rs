//! The block device under a filesystem, as sysfs describes it: which disk,
//! what kind (NVMe, SCSI/SATA, virtio, loop...), and whether it is virtual
//! (a loop file, a RAM disk, a VM's paravirtual disk), since a result on a
//! virtual disk says as much about the host's caching as about the device.
//! Best effort like the rest of `envinfo`: unknown is None, never an error.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockDevice {
    /// The whole disk's kernel name, e.g. "nvme0n1", "vda", "loop3".
    pub name: String,
    /// "nvme", "scsi", "virtio", "xen", "hyper-v", "mmc", "loop", "ram",
    /// "zram", "device-mapper", "md" or "other".
    pub kind: String,
    /// A loop file, RAM disk, mapper or a hypervisor's disk rather than
    /// hardware the kernel drives directly.
    pub is_virtual: bool,
    /// The device's model (or vendor) string, when sysfs has one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// For a loop device: the file behind it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_file: Option<String>,
}

impl BlockDevice {
    /// "vda (virtio, virtual)", "loop0 (loop, virtual, backed by /x.img)".
    pub fn describe(&self) -> String {
        let mut parts = vec![self.kind.clone(), if self.is_virtual { "virtual" } else { "physical" }.to_string()];
        if !self.model.is_empty() {
            parts.push(self.model.clone());
        }
        if let Some(f) = &self.backing_file {
            parts.push(format!("backed by {f}"));
        }
        format!("{} ({})", self.name, parts.join(", "))
    }
}

/// Describes the device `major:minor` (from mountinfo). None when it is not
/// a block device (tmpfs, overlay, NFS) or sysfs is absent.
pub fn describe(major_minor: &str) -> Option<BlockDevice> {
    let real = Path::new("/sys/dev/block").join(major_minor).canonicalize().ok()?;
    // A partition's attributes (queue, device) belong to its disk, one up.
    let disk: PathBuf = if real.join("partition").exists() { real.parent()?.to_path_buf() } else { real };
    let name = disk.file_name()?.to_string_lossy().into_owned();
    let read = |p: PathBuf| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let model = read(disk.join("device/model")).unwrap_or_default();
    let driver = std::fs::read_link(disk.join("device/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let (kind, is_virtual) = classify(&disk.to_string_lossy(), &name, &driver, &model);
    Some(BlockDevice {
        name,
        kind: kind.to_string(),
        is_virtual,
        model,
        backing_file: read(disk.join("loop/backing_file")),
    })
}

/// The `major:minor` of a block device node such as `/dev/loop2`: btrfs
/// (and other multi-device filesystems) show an anonymous 0:N in the mount
/// table, but their mount source names the real device.
pub fn numbers_of(device: &str) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    if !device.starts_with("/dev/") {
        return None;
    }
    let meta = std::fs::metadata(device).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let rdev = meta.rdev();
    Some(format!("{}:{}", libc::major(rdev), libc::minor(rdev)))
}

/// The kind of a disk from its sysfs path, name, driver and model.
fn classify(sys_path: &str, name: &str, driver: &str, model: &str) -> (&'static str, bool) {
    let starts = |p: &str| name.starts_with(p);
    let kind = if starts("loop") {
        "loop"
    } else if starts("zram") {
        "zram"
    } else if starts("ram") {
        "ram"
    } else if starts("dm-") {
        "device-mapper"
    } else if starts("md") {
        "md"
    } else if driver.starts_with("virtio") || starts("vd") {
        "virtio"
    } else if driver.contains("xen") || starts("xvd") {
        "xen"
    } else if driver.contains("storvsc") {
        "hyper-v"
    } else if starts("nvme") {
        "nvme"
    } else if starts("mmcblk") {
        "mmc"
    } else if starts("sd") || driver == "sd" {
        "scsi"
    } else {
        "other"
    };
    let hypervisor_model = ["QEMU", "VBOX", "VMware", "Virtual", "Amazon Elastic Block Store", "PersistentDisk"]
        .iter()
        .any(|m| model.contains(m));
    let is_virtual = sys_path.contains("/devices/virtual/")
        || matches!(kind, "loop" | "zram" | "ram" | "device-mapper" | "virtio" | "xen" | "hyper-v")
        || hypervisor_model;
    (kind, is_virtual)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_virtuality() {
        let pci = "/sys/devices/pci0000:00/0000:00:04.0";
        assert_eq!(classify(&format!("{pci}/virtio1/block/vda"), "vda", "virtio_blk", ""), ("virtio", true));
        assert_eq!(classify("/sys/devices/virtual/block/loop0", "loop0", "", ""), ("loop", true));
        assert_eq!(classify(&format!("{pci}/nvme/nvme0/nvme0n1"), "nvme0n1", "", "Samsung SSD 980"), ("nvme", false));
        assert_eq!(classify(&format!("{pci}/host0/sda"), "sda", "sd", "QEMU HARDDISK"), ("scsi", true));
        assert_eq!(classify(&format!("{pci}/host0/sda"), "sda", "sd", "WDC WD40EFRX"), ("scsi", false));
        assert_eq!(classify("/sys/devices/virtual/block/dm-0", "dm-0", "", ""), ("device-mapper", true));
    }

    #[test]
    fn descriptions_name_the_disk_and_its_kind() {
        let d = BlockDevice {
            name: "loop0".into(),
            kind: "loop".into(),
            is_virtual: true,
            model: String::new(),
            backing_file: Some("/tmp/x.img".into()),
        };
        assert_eq!(d.describe(), "loop0 (loop, virtual, backed by /tmp/x.img)");
    }

    #[test]
    fn a_filesystem_without_a_device_has_none() {
        // Major 0 is the kernel's "no device" (tmpfs, proc, overlay).
        assert_eq!(describe("0:9999"), None);
        assert_eq!(describe("not-a-device"), None);
        assert_eq!(numbers_of("tmpfs"), None);
        assert_eq!(numbers_of("/dev/null"), None, "a character device is not a disk");
    }
}
