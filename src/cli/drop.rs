//! `drop`: an S3 dataset removed with its objects, and `stat --s3 URL
//! --s3-bucket B`: the blobbench datasets in a bucket, so nothing is left
//! behind unseen.

use std::path::PathBuf;

use clap::Args;

use blobbench::engine::s3::{self, Dropped};
use blobbench::records::S3Params;
use blobbench::report::{table_text, ColumnKind, Table};

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
}

pub fn drop(args: DropArgs) -> anyhow::Result<()> {
    let (what, dropped) = match (&args.dir, &args.prefix, &args.s3, &args.s3_bucket) {
        (Some(dir), ..) => (dir.display().to_string(), s3::drop_dataset(dir, &S3Params::default())?),
        (None, Some(prefix), Some(url), Some(bucket)) => {
            (prefix.clone(), s3::drop_prefix(url, bucket, prefix, &S3Params::default())?)
        }
        _ => anyhow::bail!("give a dataset's directory, or --prefix with --s3 URL and --s3-bucket NAME"),
    };
    println!("{}", dropped_line(&what, &dropped));
    Ok(())
}

fn dropped_line(what: &str, d: &Dropped) -> String {
    let objects = match d.objects {
        Some(n) => format!("{n} object{} in {}", blobbench::util::units::plural(n), d.place),
        None => d.place.clone(),
    };
    let dir = if d.dir_removed { "" } else { " (its directory held other files, kept)" };
    format!("Dropped {what}: removed {objects}{dir}")
}

/// `stat --s3 URL --s3-bucket B`: every `blobbench/NAME/` prefix in the
/// bucket, with its objects, bytes and age.
pub fn list(servers: &super::servers::ServerArgs, json: bool) -> anyhow::Result<()> {
    let (Some(url), Some(bucket)) = (&servers.s3, &servers.s3_bucket) else {
        anyhow::bail!("stat needs a PATH, or --s3 URL and --s3-bucket NAME to list a store's blobbench datasets");
    };
    let mut settings = blobbench::records::EngineSettings::default();
    servers.apply(&mut settings);
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
            vec![d.prefix.clone(), d.objects.to_string(), d.bytes.to_string(), age, whose.into()]
        })
        .collect();
    let table = Table::new(&["Prefix", "Objects", "Bytes", "Age", ""], rows).with_kinds(&[
        ColumnKind::Text,
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
