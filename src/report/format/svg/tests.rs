use super::canvas::*;
use super::heatmap::diverging_colour;
use super::scale::*;
use super::*;

fn parse(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{svg}"))
}

fn with_class<'a>(doc: &'a roxmltree::Document<'a>, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants().filter(|n| n.attribute("class") == Some(class)).collect()
}

fn num(node: &roxmltree::Node, attr: &str) -> f64 {
    node.attribute(attr).unwrap_or_else(|| panic!("no {attr}")).parse().unwrap()
}

fn bars() -> BarChart {
    BarChart {
        title: "Reads by SQL".into(),
        y_label: "file time / SQLite time".into(),
        groups: vec!["host-a".into(), "host-b".into()],
        series: vec!["SQLite".into(), "files".into(), "tree".into()],
        values: vec![vec![Some(1.0), Some(2.0), Some(3.0)], vec![Some(1.0), None, Some(0.5)]],
        reference: Some(1.0),
        errors: Vec::new(),
        note: String::new(),
    }
}

#[test]
fn escaping_covers_markup_and_quotes() {
    assert_eq!(esc(r#"<script>alert(1)</script> a&b"c'"#), "&lt;script&gt;alert(1)&lt;/script&gt; a&amp;b&quot;c&#39;");
    assert_eq!(esc("bell\u{7}"), "bell\u{FFFD}", "control characters are not valid XML");
}

#[test]
fn axis_bounds_are_round_and_cover_the_data() {
    assert_eq!(nice_axis(1.0), (1.0, 0.2));
    assert_eq!(nice_axis(3.2), (4.0, 1.0));
    assert_eq!(nice_axis(11.0), (12.5, 2.5));
    let (max, step) = nice_axis(0.0);
    assert!(max > 0.0 && step > 0.0, "an empty chart still has an axis");
}

#[test]
fn bar_heights_are_proportional_to_values() {
    let svg = bars().to_svg();
    let doc = parse(&svg);
    let rects = with_class(&doc, "bar");
    assert_eq!(rects.len(), 5, "five measured values, one missing");
    let unit = num(&rects[0], "height"); // value 1.0
    assert!(unit > 0.0);
    for r in &rects {
        let (h, v) = (num(r, "height"), num(r, "data-value"));
        assert!((h - v * unit).abs() < 0.05, "height {h} for value {v} (unit {unit})");
    }
    // All bars stand on the same baseline.
    let base = num(&rects[0], "y") + unit;
    assert!(rects.iter().all(|r| (num(r, "y") + num(r, "height") - base).abs() < 0.05));
}

#[test]
fn reference_line_sits_at_its_value() {
    let svg = bars().to_svg();
    let doc = parse(&svg);
    let refs = with_class(&doc, "reference");
    assert_eq!(refs.len(), 1);
    let one = &with_class(&doc, "bar")[0]; // the 1.0 bar
    assert!((num(&refs[0], "y1") - num(one, "y")).abs() < 0.1, "the 1.0 line is level with the top of the 1.0 bar");
    assert_eq!(num(&refs[0], "y1"), num(&refs[0], "y2"));
}

#[test]
fn missing_values_say_not_measured() {
    let svg = bars().to_svg();
    let doc = parse(&svg);
    let missing = with_class(&doc, "missing");
    let groups: Vec<_> = missing.iter().filter(|n| n.tag_name().name() == "g").collect();
    assert_eq!(groups.len(), 1);
    assert_eq!((groups[0].attribute("data-group"), groups[0].attribute("data-series")), (Some("1"), Some("1")));
    assert!(svg.contains("not measured"));
    let mut nan = bars();
    nan.values[0][2] = Some(f64::NAN);
    assert_eq!(with_class(&parse(&nan.to_svg()), "bar").len(), 4, "NaN is drawn as missing, not as a bar");
}

#[test]
fn hostile_labels_are_text_not_markup() {
    let mut chart = bars();
    chart.groups[0] = "<script>alert(1)</script>".into();
    chart.series[1] = r#"a&b"c"#.into();
    chart.title = "</svg><b>".into();
    let svg = chart.to_svg();
    let doc = parse(&svg);
    assert!(doc.descendants().all(|n| !matches!(n.tag_name().name(), "script" | "b")));
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.contains(&"<script>alert(1)</script>"));
    assert!(texts.contains(&r#"a&b"c"#));
    assert_eq!(doc.root_element().attribute("aria-label"), Some("</svg><b>"));
}

#[test]
fn long_labels_are_cut_with_a_tooltip() {
    let mut chart = bars();
    chart.groups[1] = "a-very-long-hostname.example.internal.company.com".into();
    let svg = chart.to_svg();
    let doc = parse(&svg);
    assert!(doc.descendants().any(|n| n.tag_name().name() == "title" && n.text() == Some(chart.groups[1].as_str())));
    assert!(svg.contains("a-very-long-hostname.exampl…"));
}

#[test]
fn empty_charts_are_still_valid() {
    let empty = BarChart {
        title: "t".into(),
        y_label: "y".into(),
        groups: vec![],
        series: vec![],
        values: vec![],
        reference: Some(1.0),
        errors: Vec::new(),
        note: String::new(),
    };
    parse(&empty.to_svg());
    let line = LineChart {
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        x_log: true,
        y_log: false,
        x: vec![],
        series: vec![],
        reference: None,
        note: String::new(),
    };
    parse(&line.to_svg());
    let heat = Heatmap {
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        columns: vec![],
        rows: vec![],
        values: vec![],
        center: 1.0,
        noisy: Vec::new(),
        note: String::new(),
    };
    parse(&heat.to_svg());
}

fn lines(x_log: bool) -> LineChart {
    LineChart {
        title: "Concurrency".into(),
        x_label: "threads".into(),
        y_label: "ops/s".into(),
        x_log,
        y_log: false,
        x: vec![1.0, 10.0, 100.0, 1000.0],
        series: vec![
            Series {
                name: "SQLite".into(),
                values: vec![Some(1.0), Some(2.0), None, Some(4.0)],
                intervals: Vec::new(),
            },
            Series {
                name: "files".into(),
                values: vec![Some(2.0), Some(2.0), Some(2.0), Some(2.0)],
                intervals: Vec::new(),
            },
        ],
        reference: Some(1.0),
        note: String::new(),
    }
}

#[test]
fn log_axis_spaces_decades_evenly() {
    let svg = lines(true).to_svg();
    let doc = parse(&svg);
    let xs: Vec<f64> = with_class(&doc, "point")
        .iter()
        .filter(|p| p.attribute("data-series") == Some("1"))
        .map(|p| num(p, "cx"))
        .collect();
    assert_eq!(xs.len(), 4);
    let gaps: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|g| (g - gaps[0]).abs() < 0.2), "decades evenly spaced: {gaps:?}");
    assert!(svg.contains("threads (log scale)"));

    let linear = lines(false).to_svg();
    let doc = parse(&linear);
    let xs: Vec<f64> = with_class(&doc, "point")
        .iter()
        .filter(|p| p.attribute("data-series") == Some("1"))
        .map(|p| num(p, "cx"))
        .collect();
    assert!(xs[1] - xs[0] < (xs[3] - xs[2]) / 10.0, "linear axis: 1..10 is much shorter than 100..1000");
}

#[test]
fn a_gap_breaks_the_line() {
    let svg = lines(true).to_svg();
    let doc = parse(&svg);
    let polylines = with_class(&doc, "line");
    let sqlite: Vec<_> = polylines.iter().filter(|p| p.attribute("data-series") == Some("0")).collect();
    assert_eq!(sqlite.len(), 1, "1-10 is a segment; 1000 alone is a point, not a line");
    assert_eq!(sqlite[0].attribute("points").unwrap().split(' ').count(), 2);
    let points = with_class(&doc, "point");
    assert_eq!(points.len(), 7);
    let y = |v: &str| {
        points
            .iter()
            .find(|p| p.attribute("data-series") == Some("0") && p.attribute("data-value") == Some(v))
            .map(|p| num(p, "cy"))
            .unwrap()
    };
    let (base, one, two) = (y("1") + (y("1") - y("2")), y("1"), y("2"));
    assert!((base - one - (one - two)).abs() < 0.1 && one > two, "y is linear in the value");
    assert_eq!(with_class(&doc, "reference").len(), 1);
}

#[test]
fn log_axis_falls_back_to_linear_for_zero() {
    let mut chart = lines(true);
    chart.x[0] = 0.0;
    let svg = chart.to_svg();
    parse(&svg);
    assert!(!svg.contains("log scale"));
}

/// One line at 0.01, 0.1, 1 and 10 against a 1.0 reference.
fn ratios(values: [f64; 4]) -> LineChart {
    LineChart {
        title: "Ratios".into(),
        x_label: "blob size".into(),
        y_label: "file time / database time".into(),
        x_log: true,
        y_log: true,
        x: vec![1.0, 10.0, 100.0, 1000.0],
        series: vec![Series { name: "engine".into(), values: values.map(Some).to_vec(), intervals: Vec::new() }],
        reference: Some(1.0),
        note: String::new(),
    }
}

fn point_ys(doc: &roxmltree::Document) -> Vec<f64> {
    with_class(doc, "point").iter().map(|p| num(p, "cy")).collect()
}

fn tick_labels<'a>(doc: &'a roxmltree::Document<'a>) -> Vec<&'a str> {
    with_class(doc, "tick")
        .iter()
        .filter(|n| n.attribute("text-anchor") == Some("end"))
        .filter_map(|n| n.text())
        .collect()
}

#[test]
fn log_y_axis_spaces_decades_evenly() {
    let svg = ratios([0.01, 0.1, 1.0, 10.0]).to_svg();
    let doc = parse(&svg);
    let ys = point_ys(&doc);
    assert_eq!(ys.len(), 4);
    let gaps: Vec<f64> = ys.windows(2).map(|w| w[0] - w[1]).collect();
    assert!(gaps[0] > 50.0, "each decade gets room: {gaps:?}");
    assert!(gaps.iter().all(|g| (g - gaps[0]).abs() < 0.2), "decades evenly spaced: {gaps:?}");
    assert!(svg.contains("file time / database time (log scale)"));

    let ticks = tick_labels(&doc);
    for decade in ["0.01", "0.10", "1.00", "10.0"] {
        assert!(ticks.contains(&decade), "{decade} in {ticks:?}");
    }
    assert!(ticks.contains(&"0.02") && ticks.contains(&"5.00"), "2s and 5s fit over 3 decades: {ticks:?}");
    // Each tick's gridline is at its value's height: 1.00's is level with the point at 1.
    let grid: Vec<f64> = with_class(&doc, "grid").iter().map(|g| num(g, "y1")).collect();
    assert_eq!(grid.len(), ticks.len());
    assert!(grid.iter().any(|y| (y - ys[2]).abs() < 0.1));
}

#[test]
fn log_y_reference_sits_at_its_value() {
    let svg = ratios([0.01, 0.1, 1.0, 10.0]).to_svg();
    let doc = parse(&svg);
    let refs = with_class(&doc, "reference");
    assert_eq!(refs.len(), 1);
    let one = point_ys(&doc)[2];
    assert!((num(&refs[0], "y1") - one).abs() < 0.1, "the 1.0 line is level with the point at 1.0");

    // Above every value, the reference still widens the axis to reach it.
    let mut below = ratios([0.01, 0.02, 0.05, 0.1]);
    below.reference = Some(1.0);
    let svg2 = below.to_svg();
    let doc2 = parse(&svg2);
    let r = num(&with_class(&doc2, "reference")[0], "y1");
    assert!(point_ys(&doc2).iter().all(|y| *y > r), "1.0 is above every value");
}

#[test]
fn log_y_falls_back_to_linear_for_zero_or_negative() {
    for bad in [0.0, -0.5] {
        let svg = ratios([bad, 0.1, 1.0, 10.0]).to_svg();
        let doc = parse(&svg);
        assert!(!svg.contains("database time (log scale)"), "{bad}: no log label");
        assert!(tick_labels(&doc).contains(&"0.00"), "{bad}: a linear axis from zero");
        let ys = point_ys(&doc);
        let (tenth, one, ten) = (ys[1], ys[2], ys[3]);
        assert!(((tenth - one) / (one - ten) - 0.1).abs() < 0.01, "{bad}: 0.1 to 1 is a tenth of 1 to 10");
    }
    let mut negative_reference = ratios([0.01, 0.1, 1.0, 10.0]);
    negative_reference.reference = Some(-1.0);
    assert!(!negative_reference.to_svg().contains("database time (log scale)"));
}

#[test]
fn log_y_ticks_fit_the_range() {
    // A narrow range gets 1-2-5 bounds, not whole decades.
    assert_eq!(YScale::log(0.24, 2.74, PLOT_H).ticks(PLOT_H), [0.2, 0.5, 1.0, 2.0, 5.0]);
    // A single value is not left on the edge of the plot.
    let one = YScale::log(1.0, 1.0, PLOT_H);
    assert!((one.fraction(1.0) - 0.5).abs() < 0.1, "{one:?}");
    // Over many decades only the decades are labelled, and they do not crowd.
    let wide = YScale::log(1e-6, 1e6, PLOT_H).ticks(PLOT_H);
    assert!(wide.iter().all(|t| (t.log10() - t.log10().round()).abs() < 1e-9), "{wide:?}");
    let gap = PLOT_H / (wide.len() - 1) as f64;
    assert!(gap >= 16.0 && wide.len() >= 3, "{wide:?}");
    assert_eq!(fmt_axis(0.001), "0.001");
    assert_eq!(fmt_axis(0.005), "0.005");
    assert_eq!(fmt_axis(0.02), "0.02");
}

#[test]
fn diverging_scale_is_white_at_the_centre() {
    assert_eq!(diverging_colour(1.0, 1.0, 4.0), "#ffffff");
    assert_eq!(diverging_colour(4.0, 1.0, 4.0), "#2166ac", "saturated blue above");
    assert_eq!(diverging_colour(0.25, 1.0, 4.0), "#b2182b", "saturated red below");
    assert_eq!(diverging_colour(100.0, 1.0, 4.0), "#2166ac", "clamped");
    let half_up = diverging_colour(2.0, 1.0, 4.0);
    let half_down = diverging_colour(0.5, 1.0, 4.0);
    assert_ne!(half_up, "#ffffff");
    assert!(half_up.starts_with("#9"), "halfway to blue: {half_up}");
    assert!(half_down.starts_with("#d"), "halfway to red: {half_down}");
}

#[test]
fn heatmap_has_a_cell_per_value() {
    let heat = Heatmap {
        title: "Internal vs external".into(),
        x_label: "blob size".into(),
        y_label: "page size".into(),
        columns: vec!["10k".into(), "100k".into(), "1m".into()],
        rows: vec!["1024".into(), "<4096>".into()],
        values: vec![vec![Some(1.535), Some(0.456), Some(0.233)], vec![Some(2.261), None, Some(1.0)]],
        center: 1.0,
        noisy: Vec::new(),
        note: String::new(),
    };
    let svg = heat.to_svg();
    let doc = parse(&svg);
    let cells = with_class(&doc, "cell");
    assert_eq!(cells.len(), 6);
    let fill = |r: &str, c: &str| {
        cells
            .iter()
            .find(|n| n.attribute("data-row") == Some(r) && n.attribute("data-column") == Some(c))
            .unwrap()
            .attribute("fill")
            .unwrap()
    };
    assert_eq!(fill("1", "2"), "#ffffff", "1.0 is the neutral centre");
    assert_eq!(fill("1", "1"), "#eeeeee", "missing is grey");
    assert_ne!(fill("0", "0"), fill("0", "2"), "above and below 1.0 differ");
    let values: Vec<&str> = with_class(&doc, "cell-value").iter().filter_map(|n| n.text()).collect();
    assert_eq!(values, ["1.53", "0.46", "0.23", "2.26", "–", "1.00"]);
    assert!(doc.descendants().any(|n| n.text() == Some("<4096>")));
}

#[test]
fn group_labels_are_cut_to_their_slot() {
    let mut chart = bars();
    chart.groups = (0..6).map(|i| format!("machine-number-{i}-with-a-long-name")).collect();
    chart.values = vec![vec![Some(1.0), Some(2.0), Some(3.0)]; 6];
    let svg = chart.to_svg();
    let doc = parse(&svg);
    let labels: Vec<&str> = with_class(&doc, "group").iter().filter_map(|n| n.text()).collect();
    assert_eq!(labels.len(), 6);
    let slot = (num(&doc.root_element(), "width") - LEFT - RIGHT) / 6.0;
    for l in labels {
        assert!(l.chars().count() as f64 * 6.5 <= slot, "{l:?} is wider than its {slot}px slot");
    }
}
