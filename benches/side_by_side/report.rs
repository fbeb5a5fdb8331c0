//! The figures collected per operator and the Markdown tables printed from them: each figure
//! as ours, Kubeflow's with default flags, Kubeflow's tuned, and the ratios. Pure.

use std::collections::BTreeMap;

/// Every figure; lower is better for all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Figure {
    IdleRss,
    RssPerPod1000x2,
    RssPerPod200x5,
    Children200x5,
    Children1000x2,
    BigJob,
    SmallJob,
    SmallJobUserCreate,
    RequestsPerJob,
    WritesPerJob,
    EventsPerJob,
    CpuPerJob,
    Finished,
    RestartRequests,
    RestartWrites,
}

impl Figure {
    pub const ALL: [Figure; 15] = [
        Figure::IdleRss,
        Figure::RssPerPod1000x2,
        Figure::RssPerPod200x5,
        Figure::Children200x5,
        Figure::Children1000x2,
        Figure::BigJob,
        Figure::SmallJob,
        Figure::SmallJobUserCreate,
        Figure::RequestsPerJob,
        Figure::WritesPerJob,
        Figure::EventsPerJob,
        Figure::CpuPerJob,
        Figure::Finished,
        Figure::RestartRequests,
        Figure::RestartWrites,
    ];

    fn label(self) -> &'static str {
        match self {
            Figure::IdleRss => "idle RSS, caches loaded (MiB)",
            Figure::RssPerPod1000x2 => {
                "RSS per pod above idle, 1000 jobs × 2 workers settled (KiB)"
            }
            Figure::RssPerPod200x5 => "RSS per pod above idle, 200 jobs × 5 workers settled (KiB)",
            Figure::Children200x5 => "200 jobs × 5 workers applied at once → all 2000 children (s)",
            Figure::Children1000x2 => {
                "1000 jobs × 2 workers applied at once → all 4000 children (s)"
            }
            Figure::BigJob => "one 1000-worker job → its 2000 children (s)",
            Figure::SmallJob => "a 1-worker job applied meanwhile → its 2 children (s)",
            Figure::SmallJobUserCreate => {
                "of which the API server answering the user's create of it (ms)"
            }
            Figure::RequestsPerJob => "API requests per finished 1-worker job (200 jobs)",
            Figure::WritesPerJob => "of which writes",
            Figure::EventsPerJob => "events created per finished 1-worker job",
            Figure::CpuPerJob => "CPU per finished 1-worker job (ms)",
            Figure::Finished => "200 1-worker jobs of 2 s applied at once → all Succeeded (s)",
            Figure::RestartRequests => "requests after a restart, 1000 jobs settled",
            Figure::RestartWrites => "of which writes",
        }
    }

    fn decimals(self) -> usize {
        match self {
            Figure::IdleRss | Figure::RssPerPod1000x2 | Figure::RssPerPod200x5 => 1,
            Figure::RestartRequests | Figure::RestartWrites | Figure::SmallJobUserCreate => 0,
            Figure::RequestsPerJob | Figure::WritesPerJob | Figure::EventsPerJob => 2,
            _ => 2,
        }
    }
}

/// What one operator measured: every run's value of each figure, and notes (request mixes).
#[derive(Clone, Debug, Default)]
pub struct Results {
    pub figures: BTreeMap<Figure, Vec<f64>>,
    pub notes: Vec<String>,
}

impl Results {
    pub fn add(&mut self, figure: Figure, value: f64) {
        self.figures.entry(figure).or_default().push(value);
    }

    fn range(&self, figure: Figure) -> Option<(f64, f64)> {
        let values = self.figures.get(&figure)?;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        values.first().map(|_| (min, max))
    }

    fn cell(&self, figure: Figure) -> String {
        match self.range(figure) {
            None => "–".into(),
            Some((lo, hi)) => range_text(lo, hi, figure.decimals()),
        }
    }
}

fn range_text(lo: f64, hi: f64, decimals: usize) -> String {
    if format!("{lo:.decimals$}") == format!("{hi:.decimals$}") {
        format!("{lo:.decimals$}")
    } else {
        format!("{lo:.decimals$}–{hi:.decimals$}")
    }
}

/// theirs ÷ ours (above 1: we are ahead), over the ranges: worst case to best case.
fn ratio(ours: &Results, theirs: &Results, figure: Figure) -> String {
    match (ours.range(figure), theirs.range(figure)) {
        (Some((o_lo, o_hi)), Some((t_lo, t_hi))) if o_lo > 0.0 => {
            let (lo, hi) = (t_lo / o_hi, t_hi / o_lo);
            format!("{}×", range_text(lo, hi, if hi < 10.0 { 2 } else { 1 }))
        }
        (Some((0.0, 0.0)), Some((t, _))) if t > 0.0 => "∞".into(),
        (Some(_), Some(_)) => "=".into(),
        _ => "–".into(),
    }
}

/// The main table: ours, Kubeflow default, Kubeflow tuned, both ratios.
pub fn table(columns: &[(String, &Results)]) -> String {
    let mut out = String::from("| figure |");
    for (name, _) in columns {
        out.push_str(&format!(" {name} |"));
    }
    let ours = columns.first().map(|(_, r)| *r);
    for (name, _) in columns.iter().skip(1) {
        out.push_str(&format!(" {name} ÷ ours |"));
    }
    out.push('\n');
    out.push_str(&"|---".repeat(columns.len() * 2));
    out.push_str("|\n");
    for figure in Figure::ALL {
        if columns.iter().all(|(_, r)| r.range(figure).is_none()) {
            continue;
        }
        out.push_str(&format!("| {} |", figure.label()));
        for (_, r) in columns {
            out.push_str(&format!(" {} |", r.cell(figure)));
        }
        for (_, r) in columns.iter().skip(1) {
            let cell = ours.map_or("–".into(), |o| ratio(o, r, figure));
            out.push_str(&format!(" {cell} |"));
        }
        out.push('\n');
    }
    out
}

/// A sweep's table: one row per setting, with the throughput figure and memory per pod.
pub fn sweep_table(title: &str, rows: &[(String, Results)]) -> String {
    let mut out = format!(
        "| {title} | {} | {} |\n|---|---|---|\n",
        Figure::Children200x5.label(),
        Figure::RssPerPod200x5.label()
    );
    for (name, r) in rows {
        out.push_str(&format!(
            "| {name} | {} | {} |\n",
            r.cell(Figure::Children200x5),
            r.cell(Figure::RssPerPod200x5)
        ));
    }
    out
}
