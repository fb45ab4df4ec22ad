//! Prefixed identifiers whose byte order is creation order (SPEC 2, "Ids").
//!
//! Time and randomness come in as arguments, so generation is deterministic under test.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Source of the random characters at the end of an id.
pub trait Entropy {
    /// Returns the next uniformly distributed 64-bit value.
    fn next_u64(&mut self) -> u64;

    /// A draw in [0, 1), for retry jitter.
    fn unit(&mut self) -> f64 {
        // 53 random bits make every f64 in [0, 1) with that spacing equally likely.
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The wall clock, injected wherever time is read so tests control it.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// SplitMix64: the one generator behind id suffixes, permission ids and jitter. Deterministic
/// for a given seed; the crates that may touch the outside world seed it.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
}

/// Ids and random draws for one owner (a store, a runtime, a permission engine), shareable
/// across threads: the one seeded id helper of the workspace.
#[derive(Debug)]
pub struct IdSource {
    inner: std::sync::Mutex<(IdGenerator, SplitMix)>,
}

impl IdSource {
    /// A source drawing from `entropy`: a fixed seed under test, a random one (seeded by the
    /// crates that may read the system, e.g. session-store's `random_entropy`) otherwise.
    pub fn new(entropy: SplitMix) -> Self {
        Self { inner: std::sync::Mutex::new((IdGenerator::new(), entropy)) }
    }

    /// The next id of kind `T` at `now_ms`.
    pub fn next<T: Identifier>(&self, now_ms: u64) -> T {
        let mut guard = self.lock();
        let (generator, entropy) = &mut *guard;
        generator.next(now_ms, entropy)
    }

    /// The next random 64-bit value.
    pub fn next_u64(&self) -> u64 {
        self.lock().1.next_u64()
    }

    /// A random draw in [0, 1).
    pub fn unit(&self) -> f64 {
        self.lock().1.unit()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (IdGenerator, SplitMix)> {
        // A panic while holding the lock leaves the generator consistent: every field is
        // updated in one assignment.
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Entropy for SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// An id given by a caller did not have the expected prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid id {value:?}: expected the prefix {expected:?}")]
pub struct IdError {
    /// The rejected value.
    pub value: String,
    /// The prefix the kind of id requires, with its underscore.
    pub expected: &'static str,
}

/// Which way an id kind sorts under plain string comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdOrder {
    /// Oldest first (messages, parts, ...).
    Ascending,
    /// Newest first (sessions).
    Descending,
}

/// A kind of prefixed id.
pub trait Identifier: Sized {
    /// The prefix including the underscore, such as `msg_`.
    const PREFIX: &'static str;
    /// The sort direction of this kind.
    const ORDER: IdOrder;
    /// Wraps an already validated string.
    fn from_validated(value: String) -> Self;
    /// Wraps an already validated string slice (the generator's path: one allocation).
    fn from_validated_str(value: &str) -> Self {
        Self::from_validated(value.to_owned())
    }
    /// The id as a string slice.
    fn as_str(&self) -> &str;

    /// Accepts a caller-given id when it carries this kind's prefix.
    fn parse(value: &str) -> Result<Self, IdError> {
        if value.len() > Self::PREFIX.len() && value.starts_with(Self::PREFIX) {
            Ok(Self::from_validated(value.to_owned()))
        } else {
            Err(IdError { value: value.to_owned(), expected: Self::PREFIX })
        }
    }
}

macro_rules! define_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $order:expr) => {
        $(#[$doc])*
        // Shared text: ids are cloned into every part and effect, so a clone must not allocate.
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Arc<str>);

        impl Identifier for $name {
            const PREFIX: &'static str = $prefix;
            const ORDER: IdOrder = $order;
            fn from_validated(value: String) -> Self {
                Self(value.into())
            }
            fn from_validated_str(value: &str) -> Self {
                Self(value.into())
            }
            fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl $name {
            /// Wraps a stored id without checking it (ids read back from storage or tests).
            pub fn new_unchecked(value: impl Into<String>) -> Self {
                Self(value.into().into())
            }
            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(|value| Self(value.into()))
            }
        }
    };
}

define_id!(/// A session id (`ses_`, newest first).
    SessionId, "ses_", IdOrder::Descending);
define_id!(/// A message id (`msg_`, oldest first).
    MessageId, "msg_", IdOrder::Ascending);
define_id!(/// A part id (`prt_`, oldest first).
    PartId, "prt_", IdOrder::Ascending);
define_id!(/// A permission request id (`per_`, oldest first).
    PermissionId, "per_", IdOrder::Ascending);
define_id!(/// A question id (`que_`, oldest first).
    QuestionId, "que_", IdOrder::Ascending);

const VALUE_BITS: u32 = 48;
const VALUE_MASK: u64 = (1 << VALUE_BITS) - 1;
const COUNTER_SPAN: u64 = 4096;
const RANDOM_CHARS: usize = 14;
/// Hex digits of the 48-bit value.
const HEX_CHARS: usize = 12;
/// Longest prefix an id kind has (`msg_`, `prt_`, ...), with room to spare.
const MAX_PREFIX: usize = 8;
const HEX: &[u8; 16] = b"0123456789abcdef";
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Makes ids that sort by creation, even within one millisecond.
///
/// The 48-bit value is `ms * 4096 + counter`; it never goes backwards, so a clock that steps
/// back or more than 4096 ids in one millisecond still give strictly increasing ids.
#[derive(Debug, Clone, Default)]
pub struct IdGenerator {
    last_value: u64,
}

impl IdGenerator {
    /// A generator that has made no id yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the next id of kind `T` at `now_ms` (epoch milliseconds).
    pub fn next<T: Identifier>(&mut self, now_ms: u64, entropy: &mut dyn Entropy) -> T {
        let floor = now_ms.saturating_mul(COUNTER_SPAN).saturating_add(1) & VALUE_MASK;
        let value = if floor > self.last_value { floor } else { (self.last_value + 1) & VALUE_MASK };
        self.last_value = value;
        let encoded = match T::ORDER {
            IdOrder::Ascending => value,
            IdOrder::Descending => !value & VALUE_MASK,
        };
        // Built on the stack and copied once into the shared text: an id is made for every
        // part, and formatting through `format!` cost two allocations and a thousand
        // instructions more.
        const { assert!(T::PREFIX.len() <= MAX_PREFIX, "an id prefix longer than MAX_PREFIX") };
        let mut id = [0u8; MAX_PREFIX + HEX_CHARS + RANDOM_CHARS];
        let mut len = T::PREFIX.len();
        id[..len].copy_from_slice(T::PREFIX.as_bytes());
        for shift in (0..HEX_CHARS).rev() {
            id[len] = HEX[((encoded >> (shift * 4)) & 0xf) as usize];
            len += 1;
        }
        for _ in 0..RANDOM_CHARS {
            let index = (entropy.next_u64() % BASE62.len() as u64) as usize;
            id[len] = BASE62[index];
            len += 1;
        }
        // Always UTF-8: a `str` prefix followed by ASCII digits.
        match std::str::from_utf8(&id[..len]) {
            Ok(text) => T::from_validated_str(text),
            Err(_) => T::from_validated(String::from_utf8_lossy(&id[..len]).into_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counter(u64);
    impl Entropy for Counter {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 11
        }
    }

    #[test]
    fn an_id_source_with_one_seed_repeats_its_ids_and_draws() {
        let (a, b) = (IdSource::new(SplitMix::new(42)), IdSource::new(SplitMix::new(42)));
        let first: Vec<SessionId> = (0..3).map(|_| a.next(1_700_000_000_000)).collect();
        let second: Vec<SessionId> = (0..3).map(|_| b.next(1_700_000_000_000)).collect();
        assert_eq!(first, second);
        assert_eq!(a.next_u64(), b.next_u64());
        let draw = a.unit();
        assert!((0.0..1.0).contains(&draw), "{draw}");
    }

    #[test]
    fn ascending_ids_sort_by_creation_within_a_millisecond() {
        let mut generator = IdGenerator::new();
        let mut entropy = Counter(7);
        let ids: Vec<PartId> = (0..5000).map(|_| generator.next(1_700_000_000_000, &mut entropy)).collect();
        assert!(ids.windows(2).all(|w| w[0].as_str() < w[1].as_str()));
        assert!(ids.iter().all(|id| id.as_str().starts_with("prt_") && id.as_str().len() == 30));
    }

    #[test]
    fn descending_ids_list_newest_first() {
        let mut generator = IdGenerator::new();
        let mut entropy = Counter(1);
        let older: SessionId = generator.next(1_000, &mut entropy);
        let newer: SessionId = generator.next(1_000, &mut entropy);
        let newest: SessionId = generator.next(2_000, &mut entropy);
        assert!(newer.as_str() < older.as_str());
        assert!(newest.as_str() < newer.as_str());
    }

    #[test]
    fn a_clock_that_steps_back_still_gives_increasing_ids() {
        let mut generator = IdGenerator::new();
        let mut entropy = Counter(3);
        let a: MessageId = generator.next(5_000, &mut entropy);
        let b: MessageId = generator.next(4_000, &mut entropy);
        assert!(a.as_str() < b.as_str());
    }

    #[test]
    fn an_id_is_its_prefix_twelve_hex_digits_and_fourteen_base62_characters() {
        let mut generator = IdGenerator::new();
        let ms = 1_700_000_000_123;
        let part: PartId = generator.next(ms, &mut Counter(5));
        let session: SessionId = generator.next(ms, &mut Counter(5));
        let tail = |seed| {
            let mut entropy = Counter(seed);
            (0..RANDOM_CHARS)
                .map(|_| char::from(BASE62[(entropy.next_u64() % 62) as usize]))
                .collect::<String>()
        };
        let value = (ms * COUNTER_SPAN + 1) & VALUE_MASK;
        assert_eq!(part.as_str(), format!("prt_{value:012x}{}", tail(5)));
        assert_eq!(session.as_str(), format!("ses_{:012x}{}", !(value + 1) & VALUE_MASK, tail(5)));
    }

    #[test]
    fn parse_checks_the_prefix() {
        assert!(MessageId::parse("msg_abc").is_ok());
        assert_eq!(MessageId::parse("prt_abc"), Err(IdError { value: "prt_abc".into(), expected: "msg_" }));
        assert!(MessageId::parse("msg_").is_err());
    }
}
