//! The aging report's stated ratios beyond the verdict: each remedy's read
//! time over its aged layout's, and files over SQLite in the crossover
//! band. Paired by round when the file holds the rounds; older files fall
//! back to the ratio of the medians, marked unpaired.

use crate::report::format::doc::{Block, Table};
use crate::report::interval::{Method, Ratio};
use crate::studies::aging::{AgePoint, AgingSetting, Crossover, ReadFigures};

/// The earlier method, for files without rounds: the ratio of two medians,
/// its interval the factor widened by both sides' run-to-run spread (the
/// points keep a median and a coefficient of variation, not every run),
/// marked unpaired.
pub fn unpaired(numerator: &ReadFigures, denominator: &ReadFigures) -> Ratio {
    let value = numerator.per_op_us / denominator.per_op_us;
    let spread = (numerator.cv_pct + denominator.cv_pct) / 100.0;
    Ratio {
        low: value / (1.0 + spread),
        high: value * (1.0 + spread),
        method: Method::MinMax,
        runs: (numerator.runs as usize, denominator.runs as usize),
        ..Ratio::exact(value)
    }
}

/// "0.82x (0.78-0.85 (95% paired, 8 rounds))".
fn cell(r: Option<Ratio>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("{:.2}x ({})", r.value, r.describe()))
}

/// A remedy point's read time over its aged layout's (warm or cold):
/// paired by round, or for older files the medians' ratio against the
/// layout's point at the last age.
pub fn remedy_effect(s: &AgingSetting, p: &AgePoint, cold: bool) -> Option<Ratio> {
    if s.remedy_rounds(cold).is_some() {
        return s.remedy_effect(p, cold).map(|r| Ratio::paired(&r));
    }
    let aged = s.points.iter().filter(|a| a.layout == p.layout && a.remedy.is_none()).max_by_key(|a| a.age)?;
    let figures = |q: &AgePoint| if cold { q.read_cold } else { q.read_warm };
    Some(unpaired(&figures(p)?, &figures(aged)?))
}

/// The table of the remedies' effects; None without remedies.
pub fn remedies_table(s: &AgingSetting) -> Option<Vec<Block>> {
    if s.remedies.is_empty() {
        return None;
    }
    let paired = s.remedy_rounds(false).is_some();
    let rows = s
        .remedies
        .iter()
        .map(|p| {
            vec![
                p.layout.to_string(),
                p.remedy.clone().unwrap_or_default(),
                cell(remedy_effect(s, p, false)),
                cell(remedy_effect(s, p, true)),
            ]
        })
        .collect();
    let how = if paired {
        "Each remedy ran on a copy of the aged layout, and the aged layouts and their remedied copies were the arms \
         of one set of interleaved rounds (warm, then cold): the factor is the median of the per-round ratios, \
         with its interval."
    } else {
        "This file ran the remedies one layout after another, after the last age: the factor is the ratio of the \
         medians (unpaired: a burst of load can favour either side), its interval widened by both sides' spread."
    };
    Some(vec![
        Block::Heading(format!("{}: what each remedy does to read time", s.sizes.name)),
        Block::Paragraph(format!(
            "Read time after the remedy over the aged layout's (below 1.00x the remedy made reads faster). {how} \
             The incremental-vacuum copy had one more rewrite pass than the aged layout."
        )),
        Block::Table(Table::new(&["layout", "remedy", "warm: after / before", "cold: after / before"], rows)),
    ])
}

/// "files / SQLite there: 0.85x, 0.80-0.90 (95% paired, 6 rounds)" for the
/// band where files start to win: paired by round in files whose bands ran
/// in rounds, else the medians' ratio, unpaired.
pub fn crossover_ratio(s: &AgingSetting, c: &Crossover) -> Option<String> {
    let from = c.files_faster_from_bytes?;
    let band = c.bands.iter().find(|b| b.min_bytes == from)?;
    Some(match &band.files_over_db {
        Some(p) => format!("files / SQLite there: {:.2}x, {}", p.value, Ratio::paired(p).describe()),
        None => format!(
            "files / SQLite there: {:.2}x, unpaired ratio of medians",
            band.best(&s.layouts, true)? / band.best(&s.layouts, false)?
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::rounds::synthetic;
    use crate::studies::aging::{remedy_rounds_id, Band, Fragmentation, LayoutInfo, SizeSetting, Usage};

    fn reads(per_op_us: f64) -> Option<ReadFigures> {
        Some(ReadFigures { runs: 4, per_op_us, cv_pct: 5.0, mb_per_s: 1.0, p50_us: 1.0, p99_us: 1.0 })
    }

    fn point(layout: &str, age: u32, remedy: Option<&str>, us: f64) -> AgePoint {
        AgePoint {
            layout: layout.into(),
            age,
            remedy: remedy.map(str::to_string),
            rewrite: None,
            read_warm: reads(us),
            read_cold: reads(us * 10.0),
            usage: Usage::default(),
            fragmentation: Fragmentation::default(),
        }
    }

    /// db-wal aged 2 rewrites reads in 10 us (by its median), VACUUMed in
    /// 6 us; round by round VACUUM halves the time (load varies 3x).
    fn setting(with_rounds: bool) -> AgingSetting {
        let load = [1.0, 3.0, 1.0, 2.0, 1.0, 1.0, 1.5];
        let rows: Vec<Vec<f64>> = load.iter().map(|l| vec![10.0 * l, 5.0 * l]).collect();
        let rounds = |cold: bool| synthetic(&remedy_rounds_id("article", 2, cold), &["db-wal", "db-wal/vacuum"], &rows);
        AgingSetting {
            sizes: SizeSetting::article(),
            count: 10,
            layouts: vec![LayoutInfo {
                id: "db-wal".into(),
                title: "SQLite, WAL".into(),
                engine: crate::engine::sqlite::KIND,
            }],
            points: vec![point("db-wal", 0, None, 8.0), point("db-wal", 2, None, 10.0)],
            remedies: vec![point("db-wal", 2, Some("vacuum"), 6.0)],
            crossover: vec![],
            rounds: if with_rounds { vec![rounds(false), rounds(true)] } else { vec![] },
        }
    }

    fn rows(s: &AgingSetting) -> Vec<Vec<String>> {
        let blocks = remedies_table(s).expect("a remedies table");
        match blocks.last() {
            Some(Block::Table(t)) => t.rows.clone(),
            other => panic!("not a table: {other:?}"),
        }
    }

    #[test]
    fn remedies_are_stated_paired_by_round() {
        let rows = rows(&setting(true));
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0][..2], ["db-wal".to_string(), "vacuum".to_string()]);
        assert_eq!(rows[0][2], "0.50x (0.50-0.50 (95% paired, 7 rounds))", "not the medians' 0.60x");
        assert_eq!(rows[0][3], "0.50x (0.50-0.50 (95% paired, 7 rounds))");
    }

    #[test]
    fn older_remedies_are_the_medians_ratio_marked_unpaired() {
        let rows = rows(&setting(false));
        assert_eq!(rows[0][2], "0.60x (0.55-0.66 (min-max, unpaired, 4 runs each))", "against the last age's point");
        let s = setting(false);
        let text = format!("{:?}", remedies_table(&s).unwrap());
        assert!(text.contains("one layout after another") && text.contains("unpaired"), "{text}");
        assert!(remedies_table(&AgingSetting { remedies: vec![], ..s }).is_none(), "no remedies, no table");
    }

    #[test]
    fn the_crossover_band_states_its_ratio() {
        let s = setting(true);
        let ratio = crate::measure::paired::paired_ratio(&[8.0, 8.0, 9.0, 8.0, 8.0, 8.0], &[10.0; 6]);
        let band = |files_over_db| Band {
            min_bytes: 100_000,
            max_bytes: 200_000,
            blobs: 5,
            per_op_us: vec![("db-wal".into(), 10.0), ("files-inplace".into(), 9.0)],
            files_over_db,
        };
        let mut layouts = s.layouts.clone();
        layouts.push(LayoutInfo {
            id: "files-inplace".into(),
            title: "".into(),
            engine: crate::engine::files::FLAT_KIND,
        });
        let s = AgingSetting { layouts, ..s };
        let c = |b: Band| Crossover {
            age: 2,
            cache: "warm".into(),
            bands: vec![b],
            files_faster_from_bytes: Some(100_000),
        };
        assert_eq!(
            crossover_ratio(&s, &c(band(ratio))).unwrap(),
            "files / SQLite there: 0.80x, 0.80-0.90 (95% paired, 6 rounds)"
        );
        assert_eq!(
            crossover_ratio(&s, &c(band(None))).unwrap(),
            "files / SQLite there: 0.90x, unpaired ratio of medians"
        );
        let never = Crossover { files_faster_from_bytes: None, ..c(band(None)) };
        assert_eq!(crossover_ratio(&s, &never), None);
    }
}
