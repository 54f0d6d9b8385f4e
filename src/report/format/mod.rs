//! The report's output formats: the document model the studies build
//! ([`doc`]), number and label formatting ([`fmt`], [`sizes`]), and the
//! renderers that turn it into a terminal summary, Markdown, HTML, SVG and
//! PNG charts, plus the writing of the report directory ([`output`]).

pub mod doc;
pub mod fmt;
pub mod html;
pub mod markdown;
pub mod output;
pub mod png;
pub mod sizes;
pub mod svg;
pub mod text;
