//! A reader over one TOML table that knows its dotted path, takes keys out as it reads them, and
//! refuses the keys left over.

use qstp_dataplane::params::{NameOrTable, ParamError, ParamResult, ParamTable};
use qstp_proto::{Duration, Rate};
use toml::{Table, Value};

/// A problem with one key of the document (the file name is added by the caller): the
/// simulator's own [`ParamError`], since the component kinds read their keys through
/// [`ParamTable`].
pub(crate) type FieldError = ParamError;

pub(crate) type FieldResult<T> = Result<T, FieldError>;

/// The keys of one table still to be read.
pub(crate) struct Fields {
    path: String,
    table: Table,
    /// Every key a reader asked for, present or not: the keys this table may hold.
    asked: Vec<String>,
}

impl Fields {
    /// A reader over `table`, which sits at `path` in the document (empty for the root).
    pub(crate) fn new(path: impl Into<String>, table: Table) -> Self {
        Fields {
            path: path.into(),
            table,
            asked: Vec::new(),
        }
    }

    /// The dotted path of `key` in this table.
    pub(crate) fn key(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// An error about `key` of this table.
    pub(crate) fn error(&self, key: &str, reason: impl Into<String>) -> FieldError {
        FieldError::new(self.key(key), reason)
    }

    /// Whether `key` is still there.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// The keys still to be read.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.table.keys().cloned().collect()
    }

    /// Take a raw value out.
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        if !self.asked.iter().any(|k| k == key) {
            self.asked.push(key.to_string());
        }
        self.table.remove(key)
    }

    /// A value, left in place.
    pub(crate) fn peek(&self, key: &str) -> Option<&Value> {
        self.table.get(key)
    }

    /// Put a value in place of what the file wrote (a setting the lab derives, like
    /// `limit = "auto"`), to be read as if the file had written it.
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        self.table.insert(key.to_string(), value);
    }

    /// An optional string.
    pub(crate) fn opt_str(&mut self, key: &str) -> FieldResult<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.error(
                key,
                format!("expected a string, found {}", other.type_str()),
            )),
        }
    }

    /// A string that must be there.
    pub(crate) fn str(&mut self, key: &str) -> FieldResult<String> {
        self.opt_str(key)?.ok_or_else(|| self.error(key, "missing"))
    }

    /// An optional non-negative integer.
    pub(crate) fn opt_u64(&mut self, key: &str) -> FieldResult<Option<u64>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Integer(i)) if i >= 0 => Ok(Some(i as u64)),
            Some(Value::Integer(i)) => Err(self.error(key, format!("{i} is negative"))),
            Some(other) => Err(self.error(
                key,
                format!("expected an integer, found {}", other.type_str()),
            )),
        }
    }

    /// An optional number (integer or float).
    pub(crate) fn opt_f64(&mut self, key: &str) -> FieldResult<Option<f64>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => number(&v)
                .map(Some)
                .map_err(|reason| self.error(key, reason)),
        }
    }

    /// An optional boolean.
    pub(crate) fn opt_bool(&mut self, key: &str) -> FieldResult<Option<bool>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(b)),
            Some(other) => Err(self.error(
                key,
                format!("expected true or false, found {}", other.type_str()),
            )),
        }
    }

    /// An optional rate written as a string (`"500k"`), parsed by [`Rate::parse`].
    pub(crate) fn opt_rate(&mut self, key: &str) -> FieldResult<Option<Rate>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => rate(&v).map(Some).map_err(|reason| self.error(key, reason)),
        }
    }

    /// A rate that must be there.
    pub(crate) fn rate(&mut self, key: &str) -> FieldResult<Rate> {
        self.opt_rate(key)?
            .ok_or_else(|| self.error(key, "missing"))
    }

    /// An optional duration written as a string (`"30ms"`), parsed by [`Duration::parse`].
    pub(crate) fn opt_duration(&mut self, key: &str) -> FieldResult<Option<Duration>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => duration(&v)
                .map(Some)
                .map_err(|reason| self.error(key, reason)),
        }
    }

    /// A duration that must be there.
    pub(crate) fn duration(&mut self, key: &str) -> FieldResult<Duration> {
        self.opt_duration(key)?
            .ok_or_else(|| self.error(key, "missing"))
    }

    /// An optional inline or standard table, as a reader of its own.
    pub(crate) fn opt_table(&mut self, key: &str) -> FieldResult<Option<Fields>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(Fields::new(self.key(key), t))),
            Some(other) => {
                Err(self.error(key, format!("expected a table, found {}", other.type_str())))
            }
        }
    }

    /// A table that must be there.
    pub(crate) fn table(&mut self, key: &str) -> FieldResult<Fields> {
        self.opt_table(key)?
            .ok_or_else(|| self.error(key, "missing"))
    }

    /// An optional array.
    pub(crate) fn opt_array(&mut self, key: &str) -> FieldResult<Option<Vec<Value>>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(other) => Err(self.error(
                key,
                format!("expected an array, found {}", other.type_str()),
            )),
        }
    }

    /// Refuse whatever was not read: every key left is unknown, with the nearest key the table
    /// knows when one is close ("did you mean rtt?").
    pub(crate) fn finish(self) -> FieldResult<()> {
        self.leftover()
    }

    /// The first key not read, as an error (with the nearest known key, when one is close).
    fn leftover(&self) -> FieldResult<()> {
        match self.table.keys().next() {
            None => Ok(()),
            Some(key) => {
                let nearest = self
                    .asked
                    .iter()
                    .map(|k| (edit_distance(key, k), k))
                    .filter(|&(d, k)| d <= 2 && d < k.len())
                    .min();
                Err(FieldError {
                    key: if self.path.is_empty() {
                        key.clone()
                    } else {
                        format!("{}.{key}", self.path)
                    },
                    reason: match nearest {
                        Some((_, k)) => format!("unknown key (did you mean {k}?)"),
                        None => "unknown key".into(),
                    },
                    unknown: true,
                })
            }
        }
    }
}

/// The component kinds (queues, markers, loss models) read their own keys through this.
impl ParamTable for Fields {
    fn error(&self, key: &str, reason: &str) -> ParamError {
        Fields::error(self, key, reason)
    }
    fn opt_str(&mut self, key: &str) -> ParamResult<Option<String>> {
        Fields::opt_str(self, key)
    }
    fn opt_u64(&mut self, key: &str) -> ParamResult<Option<u64>> {
        Fields::opt_u64(self, key)
    }
    fn opt_f64(&mut self, key: &str) -> ParamResult<Option<f64>> {
        Fields::opt_f64(self, key)
    }
    fn opt_bool(&mut self, key: &str) -> ParamResult<Option<bool>> {
        Fields::opt_bool(self, key)
    }
    fn opt_number_or_flag(&mut self, key: &str) -> ParamResult<Option<f64>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(if b { 1.0 } else { 0.0 })),
            Some(v) => number(&v)
                .map(Some)
                .map_err(|reason| Fields::error(self, key, reason)),
        }
    }
    fn opt_rate(&mut self, key: &str) -> ParamResult<Option<Rate>> {
        Fields::opt_rate(self, key)
    }
    fn opt_duration(&mut self, key: &str) -> ParamResult<Option<Duration>> {
        Fields::opt_duration(self, key)
    }
    fn opt_numbers(&mut self, key: &str) -> ParamResult<Option<Vec<f64>>> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(None);
        };
        items
            .iter()
            .map(|v| number(v).map_err(|reason| Fields::error(self, key, reason)))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
    fn opt_strings(&mut self, key: &str) -> ParamResult<Option<Vec<String>>> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(None);
        };
        items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                other => Err(Fields::error(
                    self,
                    key,
                    format!("expected strings, found {}", other.type_str()),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
    fn opt_tables(
        &mut self,
        key: &str,
        label: &str,
    ) -> ParamResult<Option<Vec<Box<dyn ParamTable>>>> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(None);
        };
        let mut tables: Vec<Box<dyn ParamTable>> = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let Value::Table(t) = item else {
                return Err(Fields::error(self, key, format!("item {i} is not a table")));
            };
            let name = t
                .get(label)
                .and_then(Value::as_str)
                .map_or_else(|| i.to_string(), str::to_string);
            tables.push(Box::new(Fields::new(
                format!("{}.{name}", self.key(key)),
                t,
            )));
        }
        Ok(Some(tables))
    }
    fn finish(&mut self) -> ParamResult<()> {
        self.leftover()
    }
    fn has(&self, key: &str) -> bool {
        Fields::has(self, key)
    }
    fn keys(&self) -> Vec<String> {
        Fields::keys(self)
    }
    fn opt_table(&mut self, key: &str) -> ParamResult<Option<Box<dyn ParamTable>>> {
        Ok(Fields::opt_table(self, key)?.map(|t| Box::new(t) as Box<dyn ParamTable>))
    }
    fn opt_name_or_table(&mut self, key: &str) -> ParamResult<Option<NameOrTable>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(name)) => Ok(Some(NameOrTable::Name(name))),
            Some(Value::Table(t)) => Ok(Some(NameOrTable::Table(Box::new(Fields::new(
                self.key(key),
                t,
            ))))),
            Some(other) => Err(Fields::error(
                self,
                key,
                format!("expected a name or a table, found {}", other.type_str()),
            )),
        }
    }
    fn opt_steps(&mut self, key: &str) -> ParamResult<Option<Vec<(Duration, Rate)>>> {
        let Some(items) = self.opt_array(key)? else {
            return Ok(None);
        };
        let mut out: Vec<(Duration, Rate)> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let bad = |reason: String| Fields::error(self, key, format!("step {i}: {reason}"));
            let Value::Array(pair) = item else {
                return Err(bad("expected [\"from\", \"rate\"]".into()));
            };
            if pair.len() != 2 {
                return Err(bad("expected [\"from\", \"rate\"]".into()));
            }
            let from = duration(&pair[0]).map_err(bad)?;
            let r = rate(&pair[1]).map_err(bad)?;
            out.push((from, r));
        }
        Ok(Some(out))
    }
}

/// Levenshtein distance between two keys (insertions, deletions, substitutions).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// A number from an integer or float value.
pub(crate) fn number(v: &Value) -> Result<f64, String> {
    match v {
        Value::Integer(i) => Ok(*i as f64),
        Value::Float(f) if f.is_finite() => Ok(*f),
        Value::Float(f) => Err(format!("{f} is not a finite number")),
        other => Err(format!("expected a number, found {}", other.type_str())),
    }
}

/// A rate from a string value, which must name its unit (a bare "1000" could be bit/s or
/// kbit/s; times need a unit too).
pub(crate) fn rate(v: &Value) -> Result<Rate, String> {
    match v {
        Value::String(s)
            if !s.trim().is_empty() && s.trim().chars().all(|c| c.is_ascii_digit() || c == '.') =>
        {
            Err(format!(
                "\"{s}\" has no unit: write \"{s}bps\", \"{s}k\" (kbit/s), \"{s}M\" or \"{s}G\""
            ))
        }
        Value::String(s) => Rate::parse(s).map_err(|e| e.to_string()),
        other => Err(format!(
            "expected a rate string such as \"500k\", found {}",
            other.type_str()
        )),
    }
}

/// A duration from a string value.
pub(crate) fn duration(v: &Value) -> Result<Duration, String> {
    match v {
        Value::String(s) => Duration::parse(s).map_err(|e| e.to_string()),
        other => Err(format!(
            "expected a duration string such as \"30ms\", found {}",
            other.type_str()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Fields {
        Fields::new("bottleneck", text.parse::<Table>().unwrap())
    }

    #[test]
    fn reads_units_and_names_the_key_on_error() {
        let mut f = fields("rate = \"1000k\"\ndelay = \"5ms\"\nlimit = 50");
        assert_eq!(f.rate("rate").unwrap(), Rate::from_kbps(1000));
        assert_eq!(f.duration("delay").unwrap(), Duration::from_millis(5));
        assert_eq!(f.opt_u64("limit").unwrap(), Some(50));
        f.finish().unwrap();

        let mut f = fields("rate = \"1000 furlongs\"");
        let err = f.rate("rate").unwrap_err();
        assert_eq!(err.key, "bottleneck.rate");
        assert!(err.reason.contains("unknown unit"), "{}", err.reason);

        let mut f = fields("delay = \"30\"");
        assert!(f.duration("delay").unwrap_err().reason.contains("no unit"));
    }

    #[test]
    fn leftover_keys_are_unknown() {
        let mut f = fields("rate = \"1M\"\nspeed = 3");
        f.rate("rate").unwrap();
        let err = f.finish().unwrap_err();
        assert_eq!(err.key, "bottleneck.speed");
        assert!(err.unknown);
        assert_eq!(err.reason, "unknown key");
    }

    #[test]
    fn a_misspelt_key_is_reported_with_the_nearest_known_one() {
        let mut f = fields("rate = \"1M\"\ndelya = \"10ms\"");
        f.rate("rate").unwrap();
        f.opt_duration("delay").unwrap();
        f.opt_table("loss").unwrap();
        let err = f.finish().unwrap_err();
        assert_eq!(err.key, "bottleneck.delya");
        assert_eq!(err.reason, "unknown key (did you mean delay?)");
        assert_eq!(edit_distance("rtt", "rt"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn a_rate_without_a_unit_is_refused() {
        let mut f = fields("rate = \"1000\"");
        let err = f.rate("rate").unwrap_err();
        assert!(err.reason.contains("has no unit"), "{}", err.reason);
        let mut f = fields("rate = \"1000bps\"");
        assert_eq!(f.rate("rate").unwrap(), Rate::from_bps(1000));
    }

    #[test]
    fn negative_integers_and_wrong_types_are_refused() {
        let mut f = fields("limit = -3\nrate = 500");
        assert!(f.opt_u64("limit").unwrap_err().reason.contains("negative"));
        assert!(f
            .rate("rate")
            .unwrap_err()
            .reason
            .contains("expected a rate string"));
    }
}
