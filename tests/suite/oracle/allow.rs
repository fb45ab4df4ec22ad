//! The differences the suite lets pass: those kept on purpose (each an entry of docs/SPEC.md
//! §17) and those issue 40 found that are not fixed yet. `case` is a case's name or `*`;
//! `path` a pattern over the difference's path (`*` one segment, a final `**` the rest).

/// Why a difference passes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Why {
    /// Kept on purpose: the title of its docs/SPEC.md §17 entry.
    Kept(&'static str),
    /// Not fixed yet: issue 40's item (or "found by the suite") and what differs.
    Open(&'static str),
}

/// One listed difference.
#[derive(Debug)]
pub(crate) struct Allowed {
    /// The case, or `*` for every case.
    pub case: &'static str,
    /// The pattern over the difference's path.
    pub path: &'static str,
    /// Why it passes.
    pub why: Why,
}

#[allow(dead_code)]
const fn kept(case: &'static str, path: &'static str, title: &'static str) -> Allowed {
    Allowed { case, path, why: Why::Kept(title) }
}

#[allow(dead_code)]
const fn open(case: &'static str, path: &'static str, what: &'static str) -> Allowed {
    Allowed { case, path, why: Why::Open(what) }
}

/// Differences kept on purpose.
pub(crate) const KEPT: &[Allowed] = &[];

/// Differences issue 40 found that are not fixed yet.
pub(crate) const OPEN: &[Allowed] = &[];
