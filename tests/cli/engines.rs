//! The key-value engines through the real binary: export from a kvtest
//! database (content identical, read back with each engine's own crate),
//! read and write runs with each durability, stat, and the suite with
//! `--engines`.

use crate::common;

use assert_cmd::Command;
use blobbench::records::EngineKind;
use common::{engine_rows, enterable_tempdir, kv_db, kv_rows};

fn blobbench() -> Command {
    Command::cargo_bin("blobbench").unwrap()
}

const ENGINES: [(EngineKind, &str, &str); 5] = [
    (EngineKind::Lmdb, "lmdb", "t.lmdb"),
    (EngineKind::Redb, "redb", "t.redb"),
    (EngineKind::Fjall, "fjall", "t.fjall"),
    (EngineKind::Postgres, "postgres", "t.pg"),
    (EngineKind::PostgresLo, "postgres-lo", "t.pglo"),
];

#[test]
fn export_run_and_stat_each_engine() {
    let tmp = enterable_tempdir();
    let db = tmp.path().join("kv.db");
    kv_db(&db, 60);
    let want = kv_rows(&db);
    for (kind, name, file) in ENGINES {
        let t = tmp.path().join(file);
        blobbench().args(["export"]).arg(&db).arg(&t).args(["--engine", name]).assert().success();
        assert_eq!(engine_rows(kind, &t), want, "{name}: exported content differs from the kv database");
        let out = blobbench().arg("run").arg(&t).args(["--count", "500", "--format", "json"]).output().unwrap();
        assert!(out.status.success(), "{name} read run: {}", String::from_utf8_lossy(&out.stderr));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["experiments"][0]["params"]["layout"], name, "{name}: recorded engine");
        for sync in ["fast", "durable"] {
            let out = blobbench()
                .arg("run")
                .arg(&t)
                .args(["--update", "--count", "200", "--kv-sync", sync])
                .output()
                .unwrap();
            assert!(out.status.success(), "{name} --kv-sync {sync}: {}", String::from_utf8_lossy(&out.stderr));
            // The timer covers the session's open, commit and close, and says so.
            let text = String::from_utf8_lossy(&out.stdout);
            let open = if kind.is_server() { "connect and prepare" } else { "open" };
            let covers = format!("timer (kvtest's total): {open} + loop + commit + close");
            assert!(text.contains(&covers), "{name}: {text}");
        }
        let after = engine_rows(kind, &t);
        assert_eq!(after.len(), want.len(), "{name}: writes keep every key");
        assert!(after.iter().zip(&want).all(|(a, w)| a.0 == w.0 && a.1.len() == w.1.len()), "{name}: sizes kept");
        assert_ne!(after, want, "{name}: overwrites changed content");
        let out = blobbench().arg("stat").arg(&t).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name} stat");
        assert!(text.contains(name) && text.contains("Number of entries:        60"), "{name} stat: {text}");
    }
}

#[test]
fn suite_adds_the_engines() {
    let tmp = enterable_tempdir();
    let out = tmp.path().join("rep");
    blobbench()
        .args(["suite", "--quick", "--count", "300", "--rounds", "2"])
        .args(["--engines", "lmdb,redb,fjall,postgres,postgres-lo"])
        .arg("--workdir")
        .arg(tmp.path())
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let ids: Vec<&str> = json["experiments"].as_array().unwrap().iter().filter_map(|e| e["id"].as_str()).collect();
    let usage: Vec<&str> = json["disk_usage"].as_array().unwrap().iter().filter_map(|d| d["layout"].as_str()).collect();
    for (_, name, _) in ENGINES {
        for id in [format!("read/{name}"), format!("write/{name}-fast"), format!("write/{name}-durable")] {
            assert!(ids.contains(&id.as_str()), "missing {id} in {ids:?}");
        }
        assert!(usage.contains(&name), "no disk usage row for {name}: {usage:?}");
    }
    let chart = std::fs::read_to_string(out.join("charts/engines-read.svg")).expect("the engines' read chart");
    for title in ["LMDB", "redb", "fjall", "PostgreSQL"] {
        assert!(chart.contains(title), "{title} missing from the read chart");
    }
    for name in ["postgres", "postgres-lo"] {
        let floor = format!("roundtrip/{name}");
        assert!(ids.contains(&floor.as_str()), "missing {floor} in {ids:?}");
    }
    assert!(chart.contains("SELECT 1 round trip"), "the round-trip floor stands beside the reads");
}
