//! PNG copies of the SVG charts, for places that do not take SVG (slides,
//! some issue trackers). Text needs a system font; without one the PNGs are
//! skipped and the report says so, rather than drawing charts without labels.

use std::sync::{Arc, OnceLock};

use resvg::{tiny_skia, usvg};

/// Fonts found on this machine, loaded once; `None` when there are none.
fn fonts() -> Option<Arc<usvg::fontdb::Database>> {
    static FONTS: OnceLock<Option<Arc<usvg::fontdb::Database>>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = usvg::fontdb::Database::new();
            db.load_system_fonts();
            let family = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica"]
                .into_iter()
                .find(|f| db.faces().any(|face| face.families.iter().any(|(name, _)| name == f)))
                .map(str::to_string)
                .or_else(|| db.faces().next().and_then(|f| f.families.first().map(|(n, _)| n.clone())))?;
            // Keep only that family, read into memory once: a database of
            // font files re-reads a file for every piece of text drawn
            // (tens of thousands of opens for one report).
            let mut paths: Vec<std::path::PathBuf> = db
                .faces()
                .filter(|face| face.families.iter().any(|(name, _)| *name == family))
                .filter_map(|face| match &face.source {
                    usvg::fontdb::Source::File(p) => Some(p.clone()),
                    _ => None,
                })
                .collect();
            paths.sort();
            paths.dedup();
            let mut loaded = usvg::fontdb::Database::new();
            for p in &paths {
                if let Ok(bytes) = std::fs::read(p) {
                    loaded.load_font_data(bytes);
                }
            }
            let mut db = if loaded.faces().next().is_some() { loaded } else { db };
            db.set_sans_serif_family(family);
            Some(Arc::new(db))
        })
        .clone()
}

/// Why PNGs cannot be made here, if they cannot.
pub fn unavailable() -> Option<&'static str> {
    fonts().is_none().then_some("no system font found, so the charts are in SVG only")
}

/// Renders one SVG chart at twice its size; `None` if it cannot be drawn.
pub fn from_svg(svg: &str) -> Option<Vec<u8>> {
    let fontdb = fonts()?;
    let options = usvg::Options { fontdb, ..usvg::Options::default() };
    let tree = usvg::Tree::from_str(svg, &options).ok()?;
    let scale = 2.0;
    let size = tree.size().to_int_size().scale_by(scale)?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    pixmap.encode_png().ok()
}

/// [`from_svg`] for every chart, spread over the CPUs: rasterising is
/// most of the time `report` takes.
pub fn many_from_svg(svgs: &[String]) -> Vec<Option<Vec<u8>>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let chunk = svgs.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = svgs
            .chunks(chunk)
            .map(|part| (part.len(), scope.spawn(move || part.iter().map(|s| from_svg(s)).collect::<Vec<_>>())))
            .collect();
        // A panicking renderer only loses its PNGs; the SVGs are still written.
        parts.into_iter().flat_map(|(n, h)| h.join().unwrap_or_else(|_| vec![None; n])).collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn renders_a_chart_with_text() {
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" font-family="sans-serif"><text x="5" y="25">ratio 1.9x</text></svg>"#;
        match super::from_svg(svg) {
            Some(png) => {
                assert_eq!(&png[1..4], b"PNG");
                assert!(png.len() > 200);
            }
            None => assert!(super::unavailable().is_some(), "a PNG is only skipped when no font exists"),
        }
    }
}
