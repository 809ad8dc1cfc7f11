//! The one spelling of durations and sizes: flags, configuration files and environment
//! variables all parse them here.
//!
//! - A [`HumanDuration`] is a number with a unit: `500ms`, `10s`, `5m`, `1h`, `1h 30m`,
//!   `7days` (the `humantime` crate's grammar). A bare number is refused: seconds or
//!   milliseconds would be a guess.
//! - A [`ByteSize`] is a byte count with an optional unit: `128MiB`, `1.5GB`, `256mb`, `64k`,
//!   `1048576`. Units are binary whether or not they say `i` (1 KB = 1024 bytes, as Spark's
//!   and Kafka's own settings read them); case does not matter; decimals are allowed (the
//!   `parse-size` crate).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration as users write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    pub fn from_secs(s: u64) -> HumanDuration {
        HumanDuration(Duration::from_secs(s))
    }

    pub fn from_millis(ms: u64) -> HumanDuration {
        HumanDuration(Duration::from_millis(ms))
    }

    pub fn get(self) -> Duration {
        self.0
    }
}

impl FromStr for HumanDuration {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("{s:?} needs a unit, e.g. {t}s or {t}ms"));
        }
        humantime::parse_duration(t)
            .map(HumanDuration)
            .map_err(|e| format!("{s:?} is not a duration ({e}); e.g. 500ms, 10s, 5m, 1h"))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Text(s) => s.parse().map_err(serde::de::Error::custom),
            Raw::Number(n) => Err(serde::de::Error::custom(format!("{n} needs a unit, e.g. \"{n}s\" or \"{n}ms\""))),
        }
    }
}

/// A size in bytes as users write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub const fn mib(n: u64) -> ByteSize {
        ByteSize(n << 20)
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_size::Config::new()
            .with_binary()
            .parse_size(s.trim())
            .map(ByteSize)
            .map_err(|e| format!("{s:?} is not a size ({e}); e.g. 128MiB, 1.5GB, 64k or a byte count"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if n >= 1 << shift && n.is_multiple_of(1 << shift) {
                return write!(f, "{}{unit}", n >> shift);
            }
        }
        write!(f, "{n}")
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Text(s) => s.parse().map_err(serde::de::Error::custom),
            Raw::Number(n) => {
                u64::try_from(n).map(ByteSize).map_err(|_| serde::de::Error::custom(format!("{n} is not a size")))
            }
        }
    }
}

/// What a configuration source hands over: text (files, environment) or a number (TOML).
#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Number(i64),
    Text(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_units() {
        assert_eq!("500ms".parse::<HumanDuration>().unwrap().get(), Duration::from_millis(500));
        assert_eq!("10s".parse::<HumanDuration>().unwrap().get(), Duration::from_secs(10));
        assert_eq!("1h 30m".parse::<HumanDuration>().unwrap().get(), Duration::from_secs(5400));
        assert_eq!(" 1h ".parse::<HumanDuration>().unwrap().get(), Duration::from_secs(3600));
        assert!("1000".parse::<HumanDuration>().unwrap_err().contains("needs a unit"));
        assert!("soon".parse::<HumanDuration>().unwrap_err().contains("not a duration"));
        assert_eq!(HumanDuration::from_secs(90).to_string(), "1m 30s");
        let d: HumanDuration = "90s".parse().unwrap();
        assert_eq!(d.to_string().parse::<HumanDuration>().unwrap(), d, "display parses back");
    }

    #[test]
    fn sizes_are_binary_with_decimals() {
        let size = |s: &str| s.parse::<ByteSize>().map(ByteSize::get);
        assert_eq!(size("128MiB"), Ok(128 << 20));
        assert_eq!(size("256mb"), Ok(256 << 20));
        assert_eq!(size("1.5GB"), Ok(3 << 29));
        assert_eq!(size("64k"), Ok(64 << 10));
        assert_eq!(size("1048576"), Ok(1 << 20));
        assert!(size("lots").is_err());
        assert!(size("-1MB").is_err());
        assert_eq!(ByteSize::mib(128).to_string(), "128MiB");
        assert_eq!(ByteSize(1000).to_string(), "1000");
    }

    #[test]
    fn configuration_values_deserialize_from_text_or_numbers() {
        #[derive(Deserialize)]
        struct C {
            d: HumanDuration,
            s: ByteSize,
            n: ByteSize,
        }
        let c: C = toml::from_str("d = \"2s\"\ns = \"1.5KiB\"\nn = 4096").unwrap();
        assert_eq!((c.d.get(), c.s.get(), c.n.get()), (Duration::from_secs(2), 1536, 4096));
        let e = toml::from_str::<C>("d = 2000\ns = \"1k\"\nn = 1").err().unwrap().to_string();
        assert!(e.contains("needs a unit"), "{e}");
    }
}
