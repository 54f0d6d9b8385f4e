//! Engine names on the command line, taken from the engine registry so a
//! new engine appears in every list, parser and help text.

use blobbench::engine::registry;
use blobbench::records::EngineKind;
use clap::builder::{PossibleValuesParser, TypedValueParser};

/// A list of engines, as `--engines lmdb,redb` gives it.
#[derive(Debug, Clone, Default)]
pub struct EngineList(pub Vec<EngineKind>);

/// Parses `lmdb,redb,fjall` (or `all`; empty for none) into key-value engines.
pub fn key_value_list(s: &str) -> Result<EngineList, String> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(EngineList(registry::key_value_kinds()));
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
fn key_value(name: &str) -> Result<EngineKind, String> {
    match EngineKind::from_name(name) {
        Some(kind) if kind.is_key_value() => Ok(kind),
        _ => Err(format!("unknown key-value engine '{name}' (expected {})", key_value_names().join(", "))),
    }
}

fn key_value_names() -> Vec<&'static str> {
    registry::key_value_kinds().into_iter().map(EngineKind::name).collect()
}

/// Engines' names, comma-separated.
pub fn names(kinds: &[EngineKind]) -> String {
    kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(",")
}

/// The help of an `--engines` option: `what`, then the engines' names.
pub fn key_value_help(what: &str) -> String {
    format!("{what}: {} (comma-separated, or all)", key_value_names().join(","))
}

/// `export --engine`: every engine whose dataset is built from a kvtest
/// database, as clap's possible values.
pub fn buildable() -> impl TypedValueParser<Value = EngineKind> {
    let names = registry::buildable_kinds().into_iter().map(EngineKind::name);
    PossibleValuesParser::new(names).map(|name| EngineKind::from_name(&name).expect("a registry name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_come_from_the_registry() {
        assert_eq!(key_value_list("all").unwrap().0, registry::key_value_kinds());
        let err = key_value_list("lmdb,nope").unwrap_err();
        for name in key_value_names() {
            assert!(err.contains(name), "{err}");
        }
        assert!(key_value_help("x").contains(&key_value_names().join(",")));
    }
}
