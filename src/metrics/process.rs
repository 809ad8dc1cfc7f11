//! Process metrics (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_virtual_memory_bytes`, `process_open_fds`, `process_threads`,
//! `process_start_time_seconds`, as Prometheus's own clients name them; Linux `/proc`) and
//! `deltabus_build_info{version}`, read at each scrape; and the process's commit PUTs against
//! the commits that landed (`deltabus_commit_attempts`, `deltabus_commits_landed`), whose
//! ratio is what racing writers cost, the object-store requests sent
//! (`deltabus_store_requests`), and the heap trims near the memory bound (`deltabus_heap_trims`).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
}

/// Registers the process collector and the build information.
pub(crate) fn register(registry: &mut Registry) {
    let build: Family<BuildLabels, Gauge> = Family::default();
    build.get_or_create(&BuildLabels { version: env!("CARGO_PKG_VERSION").to_string() }).set(1);
    registry.register("deltabus_build_info", "The running deltabus version (always 1)", build);
    registry.register_collector(Box::new(ProcessCollector));
}

/// What `/proc/self` says, read at each scrape.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ProcessStats {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub threads: u64,
    pub start_time_seconds: f64,
    pub open_fds: u64,
}

/// Reads the process's statistics (`None` off Linux).
pub(crate) fn read() -> Option<ProcessStats> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    let ticks = 100.0; // USER_HZ on Linux
    let page = crate::common::heap::page_size()?;
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse::<u64>().ok()))?;
    Some(ProcessStats {
        // utime (14th field) and stime (15th) counted from the state field (3rd) at index 0.
        cpu_seconds: (num(11)? + num(12)?) as f64 / ticks,
        threads: num(17)?,
        start_time_seconds: boot as f64 + num(19)? as f64 / ticks,
        virtual_bytes: num(20)?,
        resident_bytes: num(21)? * page,
        open_fds: std::fs::read_dir("/proc/self/fd").map(|d| d.count() as u64).unwrap_or(0),
    })
}

#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (attempts, landed) = crate::storage::commit_counts();
        for (name, help, value) in [
            (
                "deltabus_commit_attempts",
                "Commit PUTs sent (every table; retries after a lost race included)",
                attempts,
            ),
            ("deltabus_commits_landed", "Commits that landed (every table)", landed),
            (
                "deltabus_store_requests",
                "Object-store requests sent (every table; retries included, a listing once per attempt)",
                crate::storage::store_requests(),
            ),
            (
                "deltabus_heap_trims",
                "Times freed heap (the C library's and mimalloc's) was handed back near the Kafka pipelines' memory bound",
                crate::common::heap::trims(),
            ),
        ] {
            let c = ConstCounter::new(value);
            c.encode(encoder.encode_descriptor(name, help, None, c.metric_type())?)?;
        }
        let Some(s) = read() else { return Ok(()) };
        let cpu = ConstCounter::new(s.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "User and system CPU time spent in seconds",
            None,
            cpu.metric_type(),
        )?)?;
        let gauges: [(&str, &str, f64); 5] = [
            ("process_resident_memory_bytes", "Resident memory size in bytes", s.resident_bytes as f64),
            ("process_virtual_memory_bytes", "Virtual memory size in bytes", s.virtual_bytes as f64),
            ("process_open_fds", "Number of open file descriptors", s.open_fds as f64),
            ("process_threads", "Number of OS threads in the process", s.threads as f64),
            (
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds",
                s.start_time_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            let g = ConstGauge::new(value);
            g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn proc_self_reads() {
        let s = super::read().expect("Linux /proc");
        assert!(s.resident_bytes > 1 << 20 && s.threads >= 1 && s.open_fds >= 3, "{s:?}");
        assert!(s.start_time_seconds > 1.6e9, "{s:?}");
    }
}
