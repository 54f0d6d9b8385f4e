//! `layer-cost-probe`, the hidden child of `crashtest --power-cut` that
//! times calls on the mount for the layer's cost.

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    pub file: std::path::PathBuf,
}

/// The child that times calls on the mount for the layer-cost figures.
pub fn probe(args: ProbeArgs) -> anyhow::Result<()> {
    let (write_ns, fsync_ns) = blobbench::powercut::cost::probe(&args.file)?;
    println!("{write_ns} {fsync_ns}");
    Ok(())
}
