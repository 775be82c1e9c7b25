//! `profiles` and `colocate`: workload profiles from Prometheus as JSON, and
//! co-location predictions from such a file, without a Pushgateway or a service.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::analysis::colocate::{self, Constants, PairPrediction};
use crate::analysis::profile::WorkloadProfile;
use crate::cli::CommonArgs;
use crate::error::Error;
use crate::pipeline::profiles;
use crate::source::prometheus::{PrometheusClient, QueryRange};

/// The largest profiles file read, bytes.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;
/// The most profiles `colocate` pairs up (every pair of 1000 is half a million).
pub const MAX_PROFILES: usize = 1000;

/// `poolprof-analyzer profiles`: each workload's profile over the window, as JSON.
#[derive(Debug, clap::Args)]
pub struct ProfilesArgs {
    /// Source and window (`--prometheus`, `--lookback`, `--step`, `--end`).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `poolprof-analyzer colocate`: predictions for every pair of a profiles file.
#[derive(Debug, clap::Args)]
pub struct ColocateArgs {
    /// JSON from `poolprof-analyzer profiles` (`{"profiles":[…]}`) or a bare array of profiles.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// Only the pairs that include this workload.
    #[arg(long, value_name = "ID")]
    pub workload: Option<String>,
    /// JSON file of model constants (as `bench/colocation` writes them); default: built in.
    #[arg(long, value_name = "FILE")]
    pub constants: Option<PathBuf>,
}

/// The `profiles` output and `colocate` input.
#[derive(Debug, Serialize, Deserialize)]
pub struct ProfilesFile {
    /// One per workload.
    pub profiles: Vec<WorkloadProfile>,
}

/// The `colocate` output.
#[derive(Debug, Serialize)]
pub struct PairsFile {
    /// The constants used.
    pub constants: Constants,
    /// One per pair, `workload_a` < `workload_b`.
    pub pairs: Vec<PairPrediction>,
}

/// Fetches the profiles and prints them.
pub async fn run_profiles(args: &ProfilesArgs, out: &mut impl Write) -> Result<(), Error> {
    let found = fetch_profiles(&args.common).await?;
    write_json(out, &ProfilesFile { profiles: found })
}

/// Every workload's profile over the window `common` names, sorted by workload.
pub async fn fetch_profiles(common: &CommonArgs) -> Result<Vec<WorkloadProfile>, Error> {
    let settings = common.settings()?;
    let step = settings.config.step();
    let end = settings.end.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    });
    let range = QueryRange::ending_at(end, settings.config.analysis.lookback, Some(step));
    let client = PrometheusClient::new(settings.client)?;
    let mut found = profiles::fetch(&client, range).await?.workloads;
    found.sort_by(|a, b| a.workload.cmp(&b.workload));
    tracing::info!(profiles = found.len(), "profiles built");
    Ok(found)
}

/// Reads the profiles and prints every pair's prediction.
pub fn run_colocate(args: &ColocateArgs, out: &mut impl Write) -> Result<(), Error> {
    let profiles = read_profiles(&args.input)?;
    let constants = match &args.constants {
        Some(path) => read_constants(path)?,
        None => Constants::default(),
    };
    if let Some(id) = &args.workload {
        if !profiles.iter().any(|p| &p.workload == id) {
            return Err(Error::Usage(format!(
                "--workload {id:?}: not in {}; it has {} profiles",
                args.input.display(),
                profiles.len()
            )));
        }
    }
    let mut pairs = Vec::new();
    for (i, a) in profiles.iter().enumerate() {
        for b in &profiles[i + 1..] {
            let wanted = args
                .workload
                .as_ref()
                .is_none_or(|id| &a.workload == id || &b.workload == id);
            if wanted {
                pairs.push(colocate::predict(a, b, &constants));
            }
        }
    }
    pairs.sort_by(|x, y| (&x.workload_a, &x.workload_b).cmp(&(&y.workload_a, &y.workload_b)));
    write_json(out, &PairsFile { constants, pairs })
}

/// Reads and checks a profiles file: bounded, well-formed, unique names.
pub fn read_profiles(path: &Path) -> Result<Vec<WorkloadProfile>, Error> {
    let text = read_bounded(path)?;
    let bad = |m: String| Error::Usage(format!("{}: {m}", path.display()));
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let list = if value.is_array() {
        value
    } else {
        value.get("profiles").cloned().unwrap_or(value)
    };
    let profiles: Vec<WorkloadProfile> = serde_json::from_value(list).map_err(|e| {
        bad(format!(
            "not a list of profiles ({e}); write it with `poolprof-analyzer profiles`"
        ))
    })?;
    if profiles.len() > MAX_PROFILES {
        return Err(bad(format!(
            "{} profiles; at most {MAX_PROFILES} (use --workload or split the file)",
            profiles.len()
        )));
    }
    let mut names: Vec<&str> = profiles.iter().map(|p| p.workload.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(bad(format!(
            "workload {:?} appears twice; keep one profile per workload",
            w[0]
        )));
    }
    if let Some(p) = profiles
        .iter()
        .find(|p| p.workload.is_empty() || p.workload.len() > 128)
    {
        return Err(bad(format!(
            "workload name {:?} must be 1 to 128 bytes",
            p.workload
        )));
    }
    Ok(profiles)
}

fn read_constants(path: &Path) -> Result<Constants, Error> {
    let text = read_bounded(path)?;
    let c: Constants = serde_json::from_str(&text).map_err(|e| {
        Error::Usage(format!(
            "{}: not model constants ({e}); expected {:?}",
            path.display(),
            Constants::NAMES
        ))
    })?;
    if c.to_vec().iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(Error::Usage(format!(
            "{}: constants must be finite and >= 0",
            path.display()
        )));
    }
    Ok(c)
}

fn read_bounded(path: &Path) -> Result<String, Error> {
    let bad = |m: String| Error::Usage(format!("{}: {m}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    if meta.len() > MAX_INPUT_BYTES {
        return Err(bad(format!(
            "larger than {MAX_INPUT_BYTES} bytes; is this the right file?"
        )));
    }
    std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))
}

/// Writes `value` as pretty JSON and a newline.
pub fn write_json(out: &mut impl Write, value: &impl Serialize) -> Result<(), Error> {
    serde_json::to_writer_pretty(&mut *out, value)
        .map_err(|e| Error::Runtime(format!("cannot write the result: {e}")))?;
    writeln!(out).map_err(|e| Error::Runtime(format!("cannot write the result: {e}")))
}
