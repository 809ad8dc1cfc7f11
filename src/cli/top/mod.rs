//! `deltabus top`: a live view of running deltabus processes, read from their `/metrics`
//! endpoints (`run --metrics-addr`, `ingest --metrics-addr`, `serve`'s own port): per
//! pipeline, push table and Kafka-protocol topic the records/s, rows committed, commits/s,
//! lag, dead letters, commit latency and buffer against its bound, plus each process's memory
//! and CPU. On a terminal it redraws every interval (ratatui, usable over ssh; `q` quits);
//! `--once` (or a stdout that is not a terminal) prints the view as plain text.

mod screen;
mod view;

use std::io::Write;
use std::time::{Duration, Instant};

use clap::Args;

use crate::common::units::HumanDuration;
use crate::error::{Error, Result};
use crate::metrics::exposition;
use view::{Line, Process, Scrape};

/// `deltabus top` arguments.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Metrics endpoints to watch: HOST:PORT (as given to --metrics-addr, or a push server's
    /// address) or a full URL of a /metrics page; one or more.
    #[arg(required = true, value_name = "ENDPOINT")]
    pub endpoints: Vec<String>,
    /// Print the view once as plain text, rates over one interval, and exit (for scripts).
    #[arg(long)]
    pub once: bool,
    /// Time between two scrapes (e.g. 1s, 500ms).
    #[arg(long, default_value = "1s")]
    pub interval: HumanDuration,
}

/// One endpoint's state: its last scrape and what it shows.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub name: String,
    url: String,
    last: Option<(Instant, Scrape)>,
    /// The lines and the process figures, or why the endpoint could not be read.
    pub shown: std::result::Result<(Vec<Line>, Process), String>,
}

impl Endpoint {
    fn new(given: &str) -> Endpoint {
        let url = if given.contains("://") { given.to_string() } else { format!("http://{given}/metrics") };
        Endpoint { name: given.to_string(), url, last: None, shown: Err("not read yet".into()) }
    }

    /// Scrapes the endpoint and recomputes what it shows.
    async fn refresh(&mut self, client: &reqwest::Client) {
        let text = match client.get(&self.url).send().await.and_then(reqwest::Response::error_for_status) {
            Ok(r) => r.text().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let now = Instant::now();
        match text {
            Ok(text) => {
                let scrape = Scrape { samples: exposition::parse(&text) };
                let before = self.last.as_ref();
                let seconds = before.map_or(0.0, |(at, _)| now.duration_since(*at).as_secs_f64());
                let lines = view::lines(before.map(|(_, s)| s), &scrape, seconds);
                let process = view::process(before.map(|(_, s)| s), &scrape, seconds);
                self.shown = Ok((lines, process));
                self.last = Some((now, scrape));
            }
            Err(e) => {
                self.shown = Err(format!("unreachable: {e}"));
                self.last = None;
            }
        }
    }
}

/// Runs `deltabus top`.
///
/// # Errors
/// [`Error::InvalidArgument`] for an endpoint that is not HOST:PORT or a URL; with `--once`,
/// [`Error::Io`] when no endpoint answered.
pub(crate) async fn top(args: TopArgs, out: &mut (dyn Write + Send)) -> Result<()> {
    for e in &args.endpoints {
        if !e.contains("://") && !e.contains(':') {
            return Err(Error::InvalidArgument(format!("{e}: an endpoint is HOST:PORT or a URL")));
        }
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| Error::Internal(format!("HTTP client: {e}")))?;
    let mut endpoints: Vec<Endpoint> = args.endpoints.iter().map(|e| Endpoint::new(e)).collect();
    let interval: Duration = args.interval.0;
    let interactive = !args.once && std::io::IsTerminal::is_terminal(&std::io::stdout());
    if interactive {
        return screen::run(&mut endpoints, &client, interval).await;
    }
    loop {
        refresh_all(&mut endpoints, &client).await;
        if args.once {
            tokio::time::sleep(interval).await;
            refresh_all(&mut endpoints, &client).await;
        }
        out.write_all(text(&endpoints).as_bytes())?;
        out.flush()?;
        if args.once {
            if endpoints.iter().all(|e| e.shown.is_err()) {
                return Err(Error::Io(std::io::Error::other("no endpoint answered")));
            }
            return Ok(());
        }
        tokio::time::sleep(interval).await;
    }
}

async fn refresh_all(endpoints: &mut [Endpoint], client: &reqwest::Client) {
    futures::future::join_all(endpoints.iter_mut().map(|e| e.refresh(client))).await;
}

/// The column titles of the view.
pub(crate) const HEADER: [&str; 9] =
    ["kind", "name", "records/s", "rows", "commits/s", "lag", "dead letters", "commit ms", "buffer"];

/// A line's cells, in [`HEADER`]'s order.
pub(crate) fn cells(l: &Line) -> [String; 9] {
    [
        l.kind.to_string(),
        l.name.clone(),
        format!("{:.0}", l.records_per_second),
        format!("{:.0}", l.rows),
        format!("{:.2}", l.commits_per_second),
        l.lag.clone(),
        format!("{:.0}", l.dead_letters),
        l.latency_ms.map_or_else(|| "-".into(), |ms| format!("{ms:.0}")),
        l.buffer_percent.map_or_else(|| "-".into(), |p| format!("{p:.0}%")),
    ]
}

/// The heading of an endpoint: its name, version, memory and CPU (or why it is not shown).
pub(crate) fn heading(e: &Endpoint) -> String {
    match &e.shown {
        Ok((_, p)) => format!(
            "{}  deltabus {}  RSS {:.0} MiB  CPU {:.0}%",
            e.name,
            p.version,
            p.resident_bytes / 1048576.0,
            p.cpu_percent
        ),
        Err(why) => format!("{}  {why}", e.name),
    }
}

/// The whole view as plain text: per endpoint its heading and an aligned table.
pub(crate) fn text(endpoints: &[Endpoint]) -> String {
    let mut out = String::new();
    for e in endpoints {
        out.push_str(&heading(e));
        out.push('\n');
        let Ok((lines, _)) = &e.shown else { continue };
        let rows: Vec<[String; 9]> =
            std::iter::once(HEADER.map(str::to_string)).chain(lines.iter().map(cells)).collect();
        let widths: Vec<usize> = (0..9).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
        for row in &rows {
            let padded: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
            out.push_str("  ");
            out.push_str(padded.join("  ").trim_end());
            out.push('\n');
        }
    }
    out
}
