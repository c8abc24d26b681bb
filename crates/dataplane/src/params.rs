//! The reader a component kind takes its parameters from.
//!
//! Every queue discipline, marker and loss model reads its own keys (`limit`, `curve`, `cir`, ...)
//! in its own file, through a [`ParamTable`]: the lab implements it over a scenario's TOML table
//! (with the key's dotted path and the file in every error), and anything else that describes a
//! network (a Python dict, a test) can implement it too. So a new kind is one new file and one
//! line in its family's registry, and the scenario format follows without another edit.

use qstp_proto::{Duration, Rate};

/// A value a reader refused, at one key of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// Dotted path of the key, groups and classes addressed by name (`group.AB.rtt`).
    pub key: String,
    /// Why the value was refused.
    pub reason: String,
    /// Whether the key is not one the format knows.
    pub unknown: bool,
}

impl ParamError {
    /// An error about the value at `key`.
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        ParamError {
            key: key.into(),
            reason: reason.into(),
            unknown: false,
        }
    }
}

/// What a reader returns.
pub type ParamResult<T> = Result<T, ParamError>;

/// A key that holds either a name or a table of settings.
pub enum NameOrTable {
    /// Just a name.
    Name(String),
    /// A table (which names itself inside).
    Table(Box<dyn ParamTable>),
}

/// One table of parameters, read key by key; each key read is taken out, and
/// [`ParamTable::finish`] refuses whatever is left.
pub trait ParamTable {
    /// An error about `key` of this table (its dotted path is the table's path and `key`).
    fn error(&self, key: &str, reason: &str) -> ParamError;
    /// An optional string.
    fn opt_str(&mut self, key: &str) -> ParamResult<Option<String>>;
    /// An optional non-negative integer.
    fn opt_u64(&mut self, key: &str) -> ParamResult<Option<u64>>;
    /// An optional finite number.
    fn opt_f64(&mut self, key: &str) -> ParamResult<Option<f64>>;
    /// An optional boolean.
    fn opt_bool(&mut self, key: &str) -> ParamResult<Option<bool>>;
    /// An optional finite number, or a boolean read as 1 (`true`) or 0 (`false`): a value whose
    /// meaning (a number or a flag) the reader checks afterwards.
    fn opt_number_or_flag(&mut self, key: &str) -> ParamResult<Option<f64>>;
    /// An optional rate with its unit (`"500k"`).
    fn opt_rate(&mut self, key: &str) -> ParamResult<Option<Rate>>;
    /// An optional duration with its unit (`"30ms"`).
    fn opt_duration(&mut self, key: &str) -> ParamResult<Option<Duration>>;
    /// An optional array of finite numbers.
    fn opt_numbers(&mut self, key: &str) -> ParamResult<Option<Vec<f64>>>;
    /// An optional array of strings.
    fn opt_strings(&mut self, key: &str) -> ParamResult<Option<Vec<String>>>;
    /// An optional array of tables, each a reader of its own; errors inside item `i` name it by
    /// the string of its key `label` when it has one, else by `i`.
    fn opt_tables(
        &mut self,
        key: &str,
        label: &str,
    ) -> ParamResult<Option<Vec<Box<dyn ParamTable>>>>;
    /// Refuse any key not read (with the nearest known key, when one is close).
    fn finish(&mut self) -> ParamResult<()>;
    /// Whether `key` is there and not read yet.
    fn has(&self, key: &str) -> bool;
    /// The keys not read yet.
    fn keys(&self) -> Vec<String>;
    /// An optional table, as a reader of its own.
    fn opt_table(&mut self, key: &str) -> ParamResult<Option<Box<dyn ParamTable>>>;
    /// An optional name or table: `congestion = "cubic"` or `congestion = { name = "cubic" }`.
    fn opt_name_or_table(&mut self, key: &str) -> ParamResult<Option<NameOrTable>>;
    /// An optional list of `["from", "rate"]` steps (`[["0s", "300k"], ["60s", "1M"]]`), in the
    /// order written.
    fn opt_steps(&mut self, key: &str) -> ParamResult<Option<Vec<(Duration, Rate)>>>;

    /// A string that must be there.
    fn str(&mut self, key: &str) -> ParamResult<String> {
        self.opt_str(key)?.ok_or_else(|| self.error(key, "missing"))
    }
    /// A rate that must be there.
    fn rate(&mut self, key: &str) -> ParamResult<Rate> {
        self.opt_rate(key)?
            .ok_or_else(|| self.error(key, "missing"))
    }
    /// A byte count that must be there.
    fn bytes(&mut self, key: &str) -> ParamResult<u64> {
        self.opt_u64(key)?
            .ok_or_else(|| self.error(key, "missing (bytes)"))
    }
    /// A number, or `default` when the key is absent (`None`: the key is required).
    fn f64_or(&mut self, key: &str, default: Option<f64>) -> ParamResult<f64> {
        match (self.opt_f64(key)?, default) {
            (Some(v), _) => Ok(v),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(self.error(key, "missing")),
        }
    }
}

/// One of `choices` (`(name, value)`; the first is the default when `key` is absent); `what`
/// names the kind of choice in the error ("a colour mode").
pub fn choose<T: Copy>(
    t: &mut (impl ParamTable + ?Sized),
    key: &str,
    what: &str,
    choices: &[(&str, T)],
) -> ParamResult<T> {
    match t.opt_str(key)? {
        None => Ok(choices[0].1),
        Some(name) => choices
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
            .ok_or_else(|| {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                t.error(
                    key,
                    &format!("'{name}' is not {what} ({})", names.join(", ")),
                )
            }),
    }
}

/// The kind named by `kind`, from a registry's names; the error lists them all.
pub fn unknown_kind(
    t: &(impl ParamTable + ?Sized),
    what: &str,
    name: &str,
    known: &[&str],
) -> ParamError {
    let list = match known {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    };
    t.error("kind", &format!("'{name}' is not {what} (use {list})"))
}
