//! `drop`: an S3 dataset removed with its objects, and `stat --s3 URL
//! --s3-bucket B`: the blobbench datasets in a bucket, so nothing is left
//! behind unseen.

use std::path::PathBuf;

use clap::Args;

use blobbench::engine::s3::{self, Dropped};
use blobbench::report::{table_text, ColumnKind, Table};
use blobbench::util::units;

use super::servers::S3Reach;

#[derive(Debug, Args)]
pub struct DropArgs {
    /// The S3 dataset's directory: its objects are deleted from the store,
    /// then the directory (kept, to run drop again, if the store cannot be
    /// reached).
    #[arg(required_unless_present = "prefix", conflicts_with = "prefix")]
    pub dir: Option<PathBuf>,
    /// Instead of DIR: a prefix in --s3 URL --s3-bucket B, as `stat --s3`
    /// lists them (blobbench/NAME/), holding blobbench's marker: what a
    /// killed export or an `rm -r` of its directory left behind.
    #[arg(long, requires_all = ["s3", "s3_bucket"])]
    pub prefix: Option<String>,
    /// The store of --prefix (credentials as for export: the environment's,
    /// else AWS_PROFILE's).
    #[arg(long, value_name = "URL", requires = "prefix")]
    pub s3: Option<String>,
    /// The bucket of --prefix.
    #[arg(long, value_name = "NAME", requires = "prefix")]
    pub s3_bucket: Option<String>,
    #[command(flatten)]
    pub reach: S3Reach,
}

pub fn drop(args: DropArgs) -> anyhow::Result<()> {
    super::servers::warn_in_clear(args.s3.as_deref(), args.dir.as_deref());
    let settings = args.reach.settings();
    let s3 = &settings.s3;
    let (what, dropped) = match (&args.dir, &args.prefix, &args.s3, &args.s3_bucket) {
        (Some(dir), ..) => (dir.display().to_string(), s3::drop_dataset(dir, s3)?),
        (None, Some(prefix), Some(url), Some(bucket)) => (prefix.clone(), s3::drop_prefix(url, bucket, prefix, s3)?),
        _ => anyhow::bail!("give a dataset's directory, or --prefix with --s3 URL and --s3-bucket NAME"),
    };
    println!("{}", dropped_line(&what, &dropped));
    Ok(())
}

/// What `drop` removed, in one line: the objects (every version, on a
/// bucket keeping them) and their bytes, the incomplete uploads aborted.
fn dropped_line(what: &str, d: &Dropped) -> String {
    let dir = if d.dir_removed { "" } else { " (its directory held other files, kept)" };
    let Some(r) = &d.removed else { return format!("Dropped {what}: removed {}{dir}", d.place) };
    let objects = if r.versioned {
        format!(
            "{} object version{} and delete marker{}",
            r.objects,
            units::plural(r.objects),
            units::plural(r.objects)
        )
    } else {
        format!("{} object{}", r.objects, units::plural(r.objects))
    };
    let uploads = match r.uploads {
        0 => String::new(),
        n => format!(", and aborted {n} incomplete multipart upload{}", units::plural(n)),
    };
    let unfinished = if d.incomplete { " (an export that had not finished)" } else { "" };
    format!("Dropped {what}{unfinished}: removed {objects} ({} bytes) in {}{uploads}{dir}", r.bytes, d.place)
}

/// `stat --s3 URL --s3-bucket B`: every `blobbench/NAME/` prefix in the
/// bucket, with its objects, bytes and age.
pub fn list(servers: &super::servers::ServerArgs, json: bool) -> anyhow::Result<()> {
    let (Some(url), Some(bucket)) = (&servers.s3, &servers.s3_bucket) else {
        anyhow::bail!("stat needs a PATH, or --s3 URL and --s3-bucket NAME to list a store's blobbench datasets");
    };
    super::servers::warn_in_clear(Some(url), None);
    let settings = servers.settings();
    let found = s3::list_datasets(url, bucket, &settings.s3)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&found)?);
        return Ok(());
    }
    if found.is_empty() {
        println!("No blobbench datasets in bucket {bucket} at {url}");
        return Ok(());
    }
    let rows = found
        .iter()
        .map(|d| {
            let age = d.age_secs.map_or_else(|| "?".into(), age);
            let whose = if d.blobbench { "blobbench's" } else { "no marker: not blobbench's" };
            let uploads = d.uploads.to_string();
            vec![d.prefix.clone(), d.objects.to_string(), d.bytes.to_string(), uploads, age, whose.into()]
        })
        .collect();
    let table = Table::new(&["Prefix", "Objects", "Bytes", "Incomplete uploads", "Age", ""], rows).with_kinds(&[
        ColumnKind::Text,
        ColumnKind::Figure,
        ColumnKind::Figure,
        ColumnKind::Figure,
        ColumnKind::Figure,
        ColumnKind::Text,
    ]);
    println!("Blobbench datasets in bucket {bucket} at {url}:");
    println!("{}", table_text(&table, false).trim_end());
    println!(
        "Remove one (with blobbench's marker) with: {}",
        s3::drop_command(url, bucket, "PREFIX").replace("finish with: ", "")
    );
    Ok(())
}

/// An age as a person reads it: seconds, minutes, hours or days.
fn age(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7_200 => format!("{} min", secs / 60),
        7_200..172_800 => format!("{} h", secs / 3_600),
        _ => format!("{} d", secs / 86_400),
    }
}
