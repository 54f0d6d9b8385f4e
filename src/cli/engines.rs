//! Engine names on the command line.

use blobbench::records::EngineKind;

/// A list of engines, as `--engines lmdb,redb` gives it.
#[derive(Debug, Clone, Default)]
pub struct EngineList(pub Vec<EngineKind>);

/// Parses `lmdb,redb,fjall` (or `all`; empty for none) into key-value engines.
pub fn key_value_list(s: &str) -> Result<EngineList, String> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(EngineList(EngineKind::KEY_VALUE.to_vec()));
    }
    let mut list = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let kind = key_value(name)?;
        if !list.contains(&kind) {
            list.push(kind);
        }
    }
    Ok(EngineList(list))
}

/// One key-value engine by name.
pub fn key_value(name: &str) -> Result<EngineKind, String> {
    match EngineKind::from_name(name) {
        Some(kind) if kind.is_key_value() => Ok(kind),
        _ => Err(format!("unknown key-value engine '{name}' (expected lmdb, redb or fjall)")),
    }
}
