//! `blobbench advise` end to end on tiny datasets: the page exists, leads
//! with a recommendation, and its result file parses and matches the schema.

use std::path::Path;

use crate::common;

/// The page's Markdown, after checking the directory and its result file.
fn page(out: &Path) -> String {
    for f in ["index.html", "summary.md", "results.json", "charts/advise-reads.svg", "charts/advise-space.svg"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let v = common::valid_results(&out.join("results.json"));
    assert_eq!(v["command"], "advise");
    let parsed = blobbench::results::read(&out.join("results.json")).expect("the result file parses");
    assert!(parsed.advise.is_some());
    std::fs::read_to_string(out.join("summary.md")).unwrap()
}

#[test]
fn advise_on_your_own_files_with_the_documented_crash_table() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("mine");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    for i in 0..120u32 {
        let dir = if i % 2 == 0 { src.clone() } else { src.join("sub") };
        std::fs::write(dir.join(format!("{i}.bin")), vec![i as u8; 2000 + 50 * i as usize]).unwrap();
    }
    let before = common::snapshot(&src);
    let out = d.path().join("page");
    let stdout = common::stdout_of(
        common::blobbench()
            .args(["advise", "--quick", "--no-power-cut", "--budget", "40s", "--engines", "lmdb"])
            .arg("--from")
            .arg(&src)
            .arg("--workdir")
            .arg(d.path())
            .arg("--out")
            .arg(&out),
    );
    assert!(stdout.contains("\nRecommendation: "), "{stdout}");
    assert!(stdout.contains("Workload: 120 blobs (the files under"), "{stdout}");
    let md = page(&out);
    let advice = md.find("## Where these blobs should live").expect("the advice section");
    let verdict = md.find("## Verdict").unwrap_or(usize::MAX);
    assert!(advice < verdict, "the advice leads the page");
    assert!(md.contains("Crash facts: from the documented table"), "{md}");
    // Durability required by default: in-place files lost an acknowledged
    // write in the documented power cuts.
    assert!(md.contains("files, overwrite in place: excluded, lost 1 acknowledged write in 50 power cuts"), "{md}");
    assert!(md.contains("What would change it:"), "{md}");
    // Cold reads and the short aging pass, on a sample of these files.
    assert!(md.contains("cold read µs/op"), "{md}");
    assert!(md.contains("After 2 rewrites of every blob (the aging pass, on a sample of 120 blobs"), "{md}");
    assert!(md.contains("reads after 2 rewrites"), "{md}");
    assert!(out.join("charts/aging-yours-read-warm.svg").is_file(), "the aging chart the evidence links to");
    assert!(!md.contains("Chart 1: reads by SQL"), "only the arms advise ran are charted");
    assert_eq!(common::snapshot(&src), before, "--from DIR is never written");
}

#[test]
fn advise_quick_with_a_power_cut_run() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("page");
    let stdout = common::stdout_of(
        common::blobbench()
            .args(["advise", "--quick", "--count", "200", "--mix", "50:50", "--durability", "relaxed"])
            // A second over the least budget advise accepts here (39 s): the
            // rounds fill what is left, and nothing below counts them.
            .args(["--budget", "40s", "--engines", "redb"])
            .arg("--workdir")
            .arg(d.path())
            .arg("--out")
            .arg(&out),
    );
    assert!(stdout.contains("\nRecommendation: "), "{stdout}");
    // The terminal ends with the answer at a glance: the recommendation, one
    // line per candidate (excluded ones too) and at most three evidence lines.
    let answer = stdout.rsplit_once("\nRecommendation: ").unwrap().1;
    let lines: Vec<&str> = answer.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines[1].contains("rank") && lines[1].contains("excluded"), "{answer}");
    let candidates = lines.iter().skip(2).take_while(|l| !l.starts_with("Decisive evidence")).count();
    assert_eq!(candidates, 4, "SQLite, two file methods and redb: {answer}");
    let evidence = lines.iter().filter(|l| l.starts_with("  - ")).count();
    assert!((1..=3).contains(&evidence), "{answer}");
    assert!(lines.last().unwrap().starts_with("advise took"), "{answer}");
    // Rounds sized by time: every compared pair got 6 paired rounds, unless
    // the set-up spent the budget (a busy machine), when one round of each
    // arm was run and said so; each arm's operations per run are recorded.
    let v = common::valid_results(&out.join("results.json"));
    let least = if v["advise"]["over_budget"].is_null() { 6 } else { 1 };
    for set in v["rounds"].as_array().unwrap() {
        assert!(set["rounds"].as_array().unwrap().len() >= least, "{}", set["id"]);
        assert_eq!(set["ops_per_run"].as_array().unwrap().len(), set["arms"].as_array().unwrap().len());
    }
    let writes = v["rounds"].as_array().unwrap().iter().find(|s| s["id"] == "suite/writes").unwrap();
    assert!(writes["run_time_s"].as_f64().unwrap() > 0.0, "writes sized by time");
    let md = page(&out);
    assert!(out.join("charts/advise-headline.svg").is_file(), "the page opens with the headline chart");
    assert!(md.find("Time per operation at 50:50").unwrap() < md.find("Recommendation:").unwrap(), "{md}");
    // FUSE works on the machines these tests run on: the facts are measured.
    assert!(md.contains("Crash facts: measured here by a quick power-cut run"), "{md}");
    assert!(md.contains("Ranking at 50:50 reads:writes"), "{md}");
    assert!(md.contains("durability relaxed"), "{md}");
}

#[test]
fn a_failed_advise_removes_the_workdir_it_made_and_only_that() {
    let d = tempfile::tempdir().unwrap();
    let given = d.path().join("given");
    std::fs::create_dir(&given).unwrap();
    // A budget too short is found once the work directory exists (it is
    // needed to measure the free space).
    for workdir in [d.path().join("new/work"), given.clone()] {
        let out = common::blobbench()
            .args(["advise", "--quick", "--no-power-cut", "--budget", "1s", "--count", "200", "--workdir"])
            .arg(&workdir)
            .arg("--out")
            .arg(d.path().join("page"))
            .output()
            .unwrap();
        let err = common::one_line_error(&out);
        assert!(err.contains("--budget 1 s is too short"), "{err}");
    }
    assert!(!d.path().join("new").exists(), "both levels advise made are removed");
    assert!(given.is_dir(), "the directory the user had stays");
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["given"], "nothing else is left");
}

/// Two clients at once (threads): each candidate that meets the need runs
/// at 1 and 2 clients in rounds; the page and the terminal rank them at 2
/// by throughput, with the write p99 beside, and the result file keeps
/// each arm's merged histograms.
#[test]
fn advise_with_two_clients() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("page");
    let stdout = common::stdout_of(
        common::blobbench()
            // PostgreSQL too: a connection per client, and its cold runs
            // restart the throwaway cluster the other sets of rounds share.
            .args(["advise", "--quick", "--no-power-cut", "--count", "200", "--mix", "50:50"])
            // A second over the least budget advise accepts here (73 s).
            .args(["--engines", "lmdb,postgres", "--clients", "2", "--budget", "74s"])
            .arg("--workdir")
            .arg(d.path())
            .arg("--out")
            .arg(&out),
    );
    // The answer is the one at the clients asked for; the one-client
    // ranking is labelled as such.
    assert!(stdout.contains("\nRecommendation at 2 clients (threads), the concurrency asked for: "), "{stdout}");
    assert!(stdout.contains("\nAt one client: ") && !stdout.contains("\nRecommendation: "), "{stdout}");
    let md = page(&out);
    assert!(md.contains("## Where these blobs should live"), "{md}");
    assert!(md.contains("### At 2 clients (threads)") || md.contains("At 2 clients (threads)"), "{md}");
    assert!(md.contains("write p99"), "{md}");
    assert!(md.contains("With clients the leader"), "{md}");
    // The headline chart at N > 1 is throughput against clients, above the answer.
    let chart = md.find("Throughput at the mix against clients (threads)").expect("the clients' chart");
    assert!(chart < md.find("Recommendation at 2 clients").unwrap(), "{md}");
    assert!(out.join("charts/advise-clients.svg").is_file());
    let parsed = blobbench::results::read(&out.join("results.json")).unwrap();
    let clients = parsed.advise.unwrap().clients.expect("the clients' section");
    assert_eq!(clients.levels, [1, 2]);
    let set = parsed.rounds.iter().find(|r| r.id == "advise/clients").expect("their rounds");
    assert!(set.consistent() && set.rounds.len() >= 6, "6 paired rounds");
    for arm in &clients.arms {
        let row = arm.row();
        assert_eq!(arm.id, format!("clients/{}/{}", arm.clients, row.name()));
        let classes: Vec<&str> = arm.classes.iter().map(|c| c.class.as_str()).collect();
        assert_eq!(classes, ["read", "overwrite"], "{}", arm.id);
        assert!(arm.classes.iter().all(|c| !c.histogram.is_empty()));
        assert!(arm.window_s.is_some() && !arm.runs.is_empty(), "{}: one window per run, counted", arm.id);
    }
    // SQLite in both ways of writing, each read both ways; named on the page.
    for id in ["sqlite", "sqlite+select", "sqlite-one-writer", "sqlite-one-writer+select"] {
        assert!(clients.arms.iter().any(|a| a.id == format!("clients/2/{id}")), "{id}");
    }
    assert!(md.contains("SQLite, one writer connection") && md.contains("SQLite, a connection per client"), "{md}");
    assert!(md.contains("slowest / median client"), "{md}");
    assert!(md.contains(&format!("2 clients on {} cores", clients.cores.unwrap())), "{md}");
    assert!(md.contains("One flush on the datasets' disk"), "{md}");
    // The recommendation at N is said once on the page.
    assert_eq!(md.matches("Recommendation at 2 clients").count(), 1, "{md}");
    assert!(clients.arms.iter().any(|a| a.candidate.name() == "postgres" && a.clients == 2), "PostgreSQL at 2 clients");
    // Durability required: files in place are excluded by the documented power cuts, so not run.
    assert!(!clients.arms.iter().any(|a| a.candidate.name() == "files-inplace"));
}
