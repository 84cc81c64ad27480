//! What a knob declaration holds ([`Def`]), the typed handles that name a
//! declared knob ([`Knob`]), and the `declare!` macro that makes both
//! from one declaration.
//!
//! A knob's value is stored as a raw `u64`: the integer of a uint knob,
//! 0/1 for a bool, the word's index for a choice. The handle's type
//! parameter turns it back into a typed value on read, so a read never
//! parses a string. A name knob ([`Type::Name`], e.g. `numalab.policy`)
//! is the exception: its value is a name another layer checks against a
//! registry this crate cannot see, so [`crate::Knobs`] keeps its text and
//! [`crate::Knobs::name`] reads it. Left out: signed and list-valued knobs
//! (none is declared yet; cgroup files, which hold lists, are in
//! [`crate::cgroup`]).

use std::fmt;
use std::marker::PhantomData;

/// A knob's value type and range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// Unsigned integer in `[min, max]`.
    Uint {
        /// Smallest value accepted.
        min: u64,
        /// Largest value accepted.
        max: u64,
    },
    /// `0`/`1` (also `false`/`true`), shown as `0`/`1` as sysctls do.
    Bool,
    /// One of a fixed list of words.
    Choice {
        /// The words, in the order of the typed enum's variants.
        words: &'static [&'static str],
    },
    /// A name (ASCII letters, digits, `-`, `_`) that the layer using it
    /// checks against its own registry (the model's policies for
    /// `numalab.policy`); the raw value is unused.
    Name {
        /// The default name.
        default: &'static str,
    },
}

/// Whether `value` is spelled as a name knob's value: non-empty ASCII
/// letters, digits, `-` and `_`.
pub fn is_name(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Uint { min, max } => write!(f, "uint [{min}, {max}]"),
            Type::Bool => write!(f, "bool 0|1"),
            Type::Choice { words } => write!(f, "one of {}", words.join("|")),
            Type::Name { .. } => write!(f, "name [A-Za-z0-9_-]"),
        }
    }
}

/// The unit of a knob's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A count, a mode or a word: no unit.
    None,
    /// Milliseconds.
    Ms,
    /// Megabytes (MiB, as the kernel's `scan_size_mb` means it).
    Mb,
    /// Per second.
    Hz,
}

impl Unit {
    /// The unit as `list knobs` shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Unit::None => "none",
            Unit::Ms => "ms",
            Unit::Mb => "MB",
            Unit::Hz => "Hz",
        }
    }
}

/// Where a knob lives in a real kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A sysctl: the file's path under /proc/sys.
    Sysctl(&'static str),
    /// A debugfs file: its path under /sys/kernel/debug, and the sysctl
    /// (path under /proc/sys) it was before Linux 5.13 moved it.
    Debugfs {
        /// Path under /sys/kernel/debug.
        path: &'static str,
        /// Pre-5.13 sysctl path under /proc/sys, if there was one.
        legacy_sysctl: Option<&'static str>,
    },
    /// A kernel build configuration value, fixed when the kernel is built.
    Config(&'static str),
    /// A numalab setting with no kernel counterpart.
    Lab,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sysctl(p) => write!(f, "sysctl /proc/sys/{p}"),
            Location::Debugfs {
                path,
                legacy_sysctl: Some(l),
            } => write!(
                f,
                "debugfs /sys/kernel/debug/{path} (before 5.13: /proc/sys/{l})"
            ),
            Location::Debugfs {
                path,
                legacy_sysctl: None,
            } => write!(f, "debugfs /sys/kernel/debug/{path}"),
            Location::Config(s) => write!(f, "kernel config {s}"),
            Location::Lab => write!(f, "numalab lab-only"),
        }
    }
}

/// One declared knob. Only the registry makes them (a private field keeps
/// other crates from building one), so every `Def` is in [`crate::knob::ALL`].
#[derive(Debug, PartialEq, Eq)]
pub struct Def {
    /// Position in [`crate::knob::ALL`] and in a [`crate::Knobs`]'s values.
    pub(crate) idx: usize,
    /// Canonical name, as the Run record's `settings` lists it.
    pub name: &'static str,
    /// Other names accepted by `--set`.
    pub aliases: &'static [&'static str],
    /// Value type and range.
    pub ty: Type,
    /// The default as a raw value (see the module doc).
    pub(crate) default_raw: u64,
    /// Unit of the value.
    pub unit: Unit,
    /// Where it lives in a real kernel.
    pub location: Location,
    /// The kernel source it stands for: file and symbol, or commit.
    pub source: &'static str,
    /// What it does.
    pub description: &'static str,
}

impl Def {
    /// True when `key` is this knob's name or one of its aliases.
    pub fn answers_to(&self, key: &str) -> bool {
        self.name == key || self.aliases.contains(&key)
    }

    /// Parses `value` into a raw value, checking type and range. The error
    /// says what is wrong with the value; the caller names the knob.
    pub fn parse(&self, value: &str) -> Result<u64, String> {
        match self.ty {
            Type::Uint { min, max } => {
                let v: u64 = value
                    .parse()
                    .map_err(|_| format!("'{value}' is not a non-negative integer"))?;
                if v < min || v > max {
                    return Err(format!("{v} is out of range [{min}, {max}]"));
                }
                Ok(v)
            }
            Type::Bool => match value {
                "0" | "false" => Ok(0),
                "1" | "true" => Ok(1),
                _ => Err(format!("'{value}' is not 0 or 1")),
            },
            Type::Choice { words } => words
                .iter()
                .position(|w| *w == value)
                .map(|i| i as u64)
                .ok_or_else(|| format!("'{value}' is not one of {}", words.join(", "))),
            Type::Name { .. } => {
                if is_name(value) {
                    Ok(0)
                } else {
                    Err(format!(
                        "'{value}' is not a name (letters, digits, '-' and '_')"
                    ))
                }
            }
        }
    }

    /// The text of raw value `raw`, as the Run record shows it. A name
    /// knob has no raw value: this is its default ([`crate::Knobs::name`]
    /// has the name in force).
    pub fn show(&self, raw: u64) -> String {
        match self.ty {
            Type::Uint { .. } | Type::Bool => raw.to_string(),
            Type::Choice { words } => words[raw as usize].to_string(),
            Type::Name { default } => default.to_string(),
        }
    }

    /// The default's text.
    pub fn default_text(&self) -> String {
        self.show(self.default_raw)
    }

    /// The default as a raw value.
    pub fn default_raw(&self) -> u64 {
        self.default_raw
    }

    /// Whether the default is a value of the declared type and range; the
    /// declaration macro asserts it at compile time.
    pub(crate) const fn default_fits(&self) -> bool {
        match self.ty {
            Type::Uint { min, max } => min <= self.default_raw && self.default_raw <= max,
            Type::Bool => self.default_raw <= 1,
            Type::Choice { words } => (self.default_raw as usize) < words.len(),
            Type::Name { .. } => self.default_raw == 0,
        }
    }
}

/// A typed value a knob reads as.
pub trait Value: Copy {
    /// The value of raw value `raw` (always one [`Def::parse`] returned or
    /// the declared default).
    fn from_raw(raw: u64) -> Self;
}

impl Value for u64 {
    #[inline]
    fn from_raw(raw: u64) -> Self {
        raw
    }
}

impl Value for bool {
    #[inline]
    fn from_raw(raw: u64) -> Self {
        raw != 0
    }
}

/// An enum whose variants are the words of a choice knob.
pub trait Choice: Copy + 'static {
    /// The variants, in word order.
    const VARIANTS: &'static [Self];
    /// The words, in variant order.
    const WORDS: &'static [&'static str];
}

impl<T: Choice> Value for T {
    #[inline]
    fn from_raw(raw: u64) -> Self {
        T::VARIANTS[raw as usize]
    }
}

/// The handle of a declared knob, reading as a `T`. Only the registry
/// makes handles, so naming a knob that is not declared does not compile.
pub struct Knob<T> {
    def: &'static Def,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Knob<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Knob<T> {}

impl<T> fmt::Debug for Knob<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Knob({})", self.def.name)
    }
}

impl<T> Knob<T> {
    pub(crate) const fn declared(def: &'static Def) -> Self {
        Knob {
            def,
            _t: PhantomData,
        }
    }

    /// The declaration.
    #[inline]
    pub const fn def(self) -> &'static Def {
        self.def
    }
}

/// An unsigned integer knob.
pub type UintKnob = Knob<u64>;
/// A 0/1 knob.
pub type BoolKnob = Knob<bool>;
/// A knob whose value is one of the words of enum `T`.
pub type ChoiceKnob<T> = Knob<T>;

/// The value type of a name knob. It is not a [`Value`]: a name is read
/// with [`crate::Knobs::name`], not [`crate::Knobs::get`].
#[derive(Clone, Copy, Debug)]
pub struct Name;

/// A knob whose value is a name ([`Type::Name`]).
pub type NameKnob = Knob<Name>;

/// Declares an enum whose variants are the words of a choice knob.
macro_rules! choice {
    (
        $(#[$m:meta])*
        pub enum $name:ident {
            $( $(#[$vm:meta])* $variant:ident = $word:literal, )+
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vm])* $variant, )+
        }

        impl $crate::def::Choice for $name {
            const VARIANTS: &'static [Self] = &[$($name::$variant),+];
            const WORDS: &'static [&'static str] = &[$($word),+];
        }

        impl $name {
            /// The knob word of this variant.
            pub fn word(self) -> &'static str {
                <Self as $crate::def::Choice>::WORDS[self as usize]
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.word())
            }
        }
    };
}
pub(crate) use choice;

/// Declares every knob: one block per knob gives a typed handle constant
/// and an entry of `ALL`. The kind (`uint(MIN, MAX)`, `bool`,
/// `choice(Enum)`, `name`: a string default) fixes both the handle's type and the declared range,
/// so they cannot disagree; a default outside the range fails to compile.
macro_rules! declare {
    (@handle uint $($rest:tt)*) => { $crate::def::UintKnob };
    (@handle bool) => { $crate::def::BoolKnob };
    (@handle choice $t:ty) => { $crate::def::ChoiceKnob<$t> };
    (@handle name) => { $crate::def::NameKnob };
    (@type $d:expr; uint $min:expr, $max:expr) => { $crate::def::Type::Uint { min: $min, max: $max } };
    (@type $d:expr; bool) => { $crate::def::Type::Bool };
    (@type $d:expr; choice $t:ty) => {
        $crate::def::Type::Choice { words: <$t as $crate::def::Choice>::WORDS }
    };
    (@type $d:expr; name) => { $crate::def::Type::Name { default: $d } };
    (@raw $d:expr; name) => { 0 };
    (@raw $d:expr; $($kind:tt)*) => { $d as u64 };
    (
        $(
            $(#[$m:meta])*
            $konst:ident: $kind:ident $(($($arg:tt)*))? {
                name: $name:literal,
                aliases: [$($alias:literal),* $(,)?],
                default: $default:expr,
                unit: $unit:ident,
                location: $loc:expr,
                source: $source:literal,
                description: $desc:literal $(,)?
            }
        )*
    ) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        enum Id { $($konst),* }

        /// Every declared knob, in declaration order.
        pub const ALL: &[$crate::def::Def] = &[
            $(
                $crate::def::Def {
                    idx: Id::$konst as usize,
                    name: $name,
                    aliases: &[$($alias),*],
                    ty: $crate::def::declare!(@type $default; $kind $($($arg)*)?),
                    default_raw: $crate::def::declare!(@raw $default; $kind $($($arg)*)?),
                    unit: $crate::def::Unit::$unit,
                    location: $loc,
                    source: $source,
                    description: $desc,
                },
            )*
        ];

        $(
            $(#[$m])*
            pub const $konst: $crate::def::declare!(@handle $kind $($($arg)*)?) =
                $crate::def::Knob::declared(&ALL[Id::$konst as usize]);
            const _: () = assert!(
                ALL[Id::$konst as usize].default_fits(),
                concat!("default of ", $name, " is outside its type or range")
            );
        )*
    };
}
pub(crate) use declare;
