//! `bulkwatch tune MBOX... --truth LABELS.tsv`: sweep the Hamming radius and
//! the bulk threshold over labelled mail, print what each setting would have
//! caught and flagged, plot it, and propose values.
//!
//! The mailboxes are replayed once per radius (campaign grouping does not
//! depend on the threshold); each threshold is then applied to the weighted
//! campaign size every message saw when it was judged.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::replay::ClockArg;
use super::{load_config, CliError, Exit};
use crate::replay::{replay_files, Record, ReplayOptions};

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// Configuration file (TOML); without it, /etc/bulkwatch/bulkwatch.toml
    /// when that exists, else the built-in defaults.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Labels: `KEY<TAB>LABEL` lines, KEY a 1-based message index over all
    /// inputs in the order judged (which --clock changes; `mbox#index` and
    /// Message-ID keys do not depend on it) or a Message-ID, LABEL a campaign name or `ham`; or the
    /// four-column fixtures/labels.tsv format (mbox, index, message_id, label).
    #[arg(long)]
    pub truth: PathBuf,
    /// Write the plot here (SVG).
    #[arg(long, default_value = "tune.svg")]
    pub svg: PathBuf,
    /// Radii to try.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5")]
    pub radius: Vec<u32>,
    /// Bulk thresholds to try.
    #[arg(long, value_delimiter = ',', default_value = "3,5,10,20,50")]
    pub thresholds: Vec<f64>,
    /// Where each message's time comes from, as for `replay`.
    #[arg(long, value_enum, default_value_t = ClockArg::Simulated)]
    pub clock: ClockArg,
    /// mbox files, replayed in order (in order of arrival with --clock
    /// arrival).
    #[arg(required = true)]
    pub mbox: Vec<PathBuf>,
}

/// One setting's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub radius: u32,
    pub threshold: f64,
    /// Campaigns with at least one message flagged bulk, of all campaigns.
    pub campaign_recall: f64,
    /// Campaign messages flagged bulk, of those past the threshold-th.
    pub message_recall: f64,
    pub ham_flagged: usize,
    /// Campaigns whose messages carry more than one campaign id.
    pub split: usize,
}

/// Reads the labels file into a function from a record to its label.
fn read_truth(path: &PathBuf) -> Result<HashMap<String, String>, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.clone(),
        source,
    })?;
    let mut map = HashMap::new();
    let mut lines = text.lines().peekable();
    let four = lines.peek().is_some_and(|l| l.starts_with("mbox\t"));
    if four {
        lines.next();
    }
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let (key, label) = match (four, f.as_slice()) {
            (true, [mbox, index, _, label, ..]) => (format!("{mbox}#{index}"), *label),
            (false, [key, label, ..]) => (
                key.trim_matches(|c| c == '<' || c == '>').to_owned(),
                *label,
            ),
            _ => {
                return Err(CliError::Usage(format!(
                    "{}: line {} has too few columns",
                    path.display(),
                    i + 1
                )))
            }
        };
        map.insert(key, label.trim().to_owned());
    }
    Ok(map)
}

fn label_of<'a>(truth: &'a HashMap<String, String>, r: &Record) -> Option<&'a str> {
    truth
        .get(&format!("{}#{}", r.mbox, r.index))
        .or_else(|| truth.get(&r.n.to_string()))
        .or_else(|| r.message_id.as_ref().and_then(|m| truth.get(m.as_str())))
        .map(String::as_str)
}

/// Scores one replay at one threshold.
pub fn score(records: &[Record], labels: &[Option<&str>], radius: u32, threshold: f64) -> Row {
    let mut per: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    let mut ham_flagged = 0;
    for (r, l) in records.iter().zip(labels) {
        match l {
            Some("ham") => ham_flagged += usize::from(r.score >= threshold),
            Some(l) if *l != "spam" && *l != "malformed" => per.entry(l).or_default().push(r),
            _ => {}
        }
    }
    let (mut caught, mut past, mut past_flagged, mut split) = (0, 0, 0, 0);
    let skip = threshold.ceil().max(1.0) as usize;
    for rs in per.values() {
        caught += usize::from(rs.iter().any(|r| r.score >= threshold));
        for r in rs.iter().skip(skip) {
            past += 1;
            past_flagged += usize::from(r.score >= threshold);
        }
        let ids: HashSet<_> = rs.iter().filter_map(|r| r.campaign).collect();
        split += usize::from(ids.len() > 1);
    }
    Row {
        radius,
        threshold,
        campaign_recall: caught as f64 / per.len().max(1) as f64,
        message_recall: past_flagged as f64 / past.max(1) as f64,
        ham_flagged,
        split,
    }
}

pub fn run(args: TuneArgs) -> Result<Exit, CliError> {
    let base = load_config(args.config.as_ref())?;
    let truth = read_truth(&args.truth)?;
    if args.radius.iter().any(|k| *k > 7) {
        return Err(CliError::Usage("--radius values must be 0..=7".into()));
    }
    let mut rows = Vec::new();
    for &k in &args.radius {
        let mut cfg = base.clone();
        cfg.window.max_distance = k;
        // A sweep must not write its trial runs into shared state.
        cfg.store.backend = crate::config::StoreBackend::Memory;
        let opts = ReplayOptions {
            clock: args.clock.into(),
            ..ReplayOptions::default()
        };
        let s = replay_files(&args.mbox, &cfg, opts, |_| {})
            .map_err(|(path, source)| CliError::Read { path, source })?;
        let labels: Vec<Option<&str>> = s.records.iter().map(|r| label_of(&truth, r)).collect();
        if labels.iter().all(Option::is_none) {
            return Err(CliError::Usage(format!(
                "{}: no message of the input is labelled",
                args.truth.display()
            )));
        }
        for &t in &args.thresholds {
            rows.push(score(&s.records, &labels, k, t));
        }
    }
    let mut out = std::io::stdout().lock();
    let w = |e| CliError::Write {
        path: "stdout".into(),
        source: e,
    };
    writeln!(
        out,
        "{:>6} {:>9} {:>15} {:>14} {:>11} {:>6}",
        "radius", "threshold", "campaign_recall", "message_recall", "ham_flagged", "split"
    )
    .map_err(w)?;
    for r in &rows {
        writeln!(
            out,
            "{:>6} {:>9} {:>15.3} {:>14.3} {:>11} {:>6}",
            r.radius, r.threshold, r.campaign_recall, r.message_recall, r.ham_flagged, r.split
        )
        .map_err(w)?;
    }
    // Proposal: no ham flagged; then best message recall, fewest splits,
    // and the highest threshold (the safest) among equals.
    let best = rows.iter().filter(|r| r.ham_flagged == 0).max_by(|a, b| {
        a.message_recall
            .total_cmp(&b.message_recall)
            .then(b.split.cmp(&a.split))
            .then(a.threshold.total_cmp(&b.threshold))
    });
    match best {
        Some(b) => writeln!(
            out,
            "\n# proposed (no ham flagged, best recall):\n[window]\nmax_distance = {}\n[thresholds]\nbulk_threshold = {:.1}\nsuspect_threshold = {:.1}",
            b.radius,
            b.threshold,
            (b.threshold / 2.0).max(1.0)
        )
        .map_err(w)?,
        None => writeln!(out, "\n# no setting flags zero ham: raise the thresholds or add allow-list entries").map_err(w)?,
    }
    std::fs::write(&args.svg, svg(&rows, &args.radius)).map_err(|source| CliError::Write {
        path: args.svg.clone(),
        source,
    })?;
    writeln!(out, "# plot written to {}", args.svg.display()).map_err(w)?;
    Ok(Exit::Ok)
}

/// A line chart of message recall (solid) and ham flagged (dashed, right
/// axis) against the threshold, one colour per radius. Hand-written SVG: a
/// plotting crate would bring a font stack for one chart.
pub fn svg(rows: &[Row], radii: &[u32]) -> String {
    let (w, h, left, right, top, bottom) = (720.0, 420.0, 60.0, 60.0, 30.0, 50.0);
    let ts: Vec<f64> = {
        let mut t: Vec<f64> = rows.iter().map(|r| r.threshold).collect();
        t.sort_by(f64::total_cmp);
        t.dedup();
        t
    };
    let max_ham = rows.iter().map(|r| r.ham_flagged).max().unwrap_or(0).max(1) as f64;
    let x = |t: f64| {
        let i = ts.iter().position(|v| *v == t).unwrap_or(0) as f64;
        left + i * (w - left - right) / (ts.len().max(2) - 1) as f64
    };
    let y = |v: f64| top + (1.0 - v) * (h - top - bottom);
    let colors = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    ];
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"18\">bulkwatch tune: message recall (solid, left) and ham flagged (dashed, right) by bulk threshold</text>\n\
         <line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n<line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\" stroke=\"black\"/>\n",
        y(0.0), w - right, y(0.0), y(0.0)
    );
    for v in [0.0, 0.25, 0.5, 0.75, 1.0] {
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{v:.2}</text>\n",
            left - 6.0,
            y(v) + 4.0
        ));
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\">{:.0}</text>\n",
            w - right + 6.0,
            y(v) + 4.0,
            v * max_ham
        ));
    }
    for t in &ts {
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{t}</text>\n",
            x(*t),
            h - bottom + 18.0
        ));
    }
    for (i, k) in radii.iter().enumerate() {
        let c = colors.get(i % colors.len()).copied().unwrap_or("black");
        let pts = |f: &dyn Fn(&Row) -> f64| {
            rows.iter()
                .filter(|r| r.radius == *k)
                .map(|r| format!("{:.1},{:.1}", x(r.threshold), y(f(r))))
                .collect::<Vec<_>>()
                .join(" ")
        };
        s.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>\n",
            pts(&|r| r.message_recall)
        ));
        s.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-dasharray=\"5,4\" points=\"{}\"/>\n",
            pts(&|r| r.ham_flagged as f64 / max_ham)
        ));
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" fill=\"{c}\">k={k}</text>\n",
            left + 10.0 + 50.0 * i as f64,
            h - 8.0
        ));
    }
    s.push_str("</svg>\n");
    s
}
