//! Whether the diagnostics on stderr are coloured: `--color auto|always|never`, with `auto`
//! honouring `NO_COLOR` (<https://no-color.org>) and colouring only a terminal.

/// The `--color` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour a terminal, unless `NO_COLOR` is set to anything but the empty string.
    #[default]
    Auto,
    /// Always colour, even a pipe or a file, and even with `NO_COLOR` set.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Whether to colour a stream; `no_color` is `NO_COLOR`'s value, `terminal` whether the
    /// stream is a terminal.
    pub fn enabled(self, no_color: Option<&str>, terminal: bool) -> bool {
        match self {
            Self::Always => true,
            Self::Never => false,
            // An explicit flag wins over the environment; the environment over the default.
            Self::Auto => terminal && no_color.is_none_or(str::is_empty),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_turns_auto_off_and_the_flag_wins() {
        assert!(ColorChoice::Auto.enabled(None, true));
        assert!(ColorChoice::Auto.enabled(Some(""), true));
        assert!(!ColorChoice::Auto.enabled(Some("1"), true));
        assert!(!ColorChoice::Auto.enabled(None, false));
        assert!(ColorChoice::Always.enabled(Some("1"), false));
        assert!(!ColorChoice::Never.enabled(None, true));
    }
}
