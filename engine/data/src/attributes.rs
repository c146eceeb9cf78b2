//! Categorical input of the decision tree: attribute columns as small integer codes over
//! public domains, and a class column over declared classes.
//!
//! An attribute is `NAME` (binary: every value must be 0 or 1, as a9a's 123 features are)
//! or `NAME:LO:HI:BINS` (equal-width bins on a public range; values outside it go to the
//! edge bins). Domains are declared, never read off the data.

use crate::memory::ColumnSource;
use kinsey_core::{Error, Result};

/// One attribute and its public domain.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AttributeSpec {
    /// The column name.
    pub name: String,
    /// `(lo, hi, bins)` for a numeric column binned into equal-width bins; `None` for a 0/1
    /// attribute.
    pub bins: Option<(f64, f64, usize)>,
}

impl std::str::FromStr for AttributeSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = |m: &str| {
            Error::param(
                "attributes",
                format!("'{s}': {m} (NAME for a 0/1 attribute or NAME:LO:HI:BINS)"),
            )
        };
        let p: Vec<&str> = s.split(':').collect();
        match p.as_slice() {
            [name] if !name.is_empty() => Ok(Self {
                name: name.to_string(),
                bins: None,
            }),
            [name, lo, hi, bins] if !name.is_empty() => {
                let lo: f64 = lo.parse().map_err(|_| bad("LO is not a number"))?;
                let hi: f64 = hi.parse().map_err(|_| bad("HI is not a number"))?;
                let bins: usize = bins.parse().map_err(|_| bad("BINS is not a count"))?;
                if !(lo < hi && lo.is_finite() && hi.is_finite() && (2..=1024).contains(&bins)) {
                    return Err(bad("need finite LO < HI and 2 <= BINS <= 1024"));
                }
                Ok(Self {
                    name: name.to_string(),
                    bins: Some((lo, hi, bins)),
                })
            }
            _ => Err(bad("malformed")),
        }
    }
}

impl AttributeSpec {
    /// The number of values the attribute takes (2 for a 0/1 attribute, else its bins).
    pub fn domain(&self) -> usize {
        self.bins.map_or(2, |(_, _, b)| b)
    }

    /// The code of value `x`: its bin (values outside `[lo, hi)` in the end bins), or for a
    /// 0/1 attribute the value itself; `None` for a 0/1 attribute's other values.
    pub fn code(&self, x: f64) -> Option<u16> {
        match self.bins {
            None if x == 0.0 || x == 1.0 => Some(x as u16),
            None => None,
            Some((lo, hi, bins)) => {
                let w = (hi - lo) / bins as f64;
                Some(((x - lo) / w).floor().clamp(0.0, (bins - 1) as f64) as u16)
            }
        }
    }
}

/// Read attributes (every numeric column but the label when `attrs` is empty, as binary)
/// and the class column `label` whose values must be among `classes`.
pub fn read_categorical_data<S: ColumnSource + ?Sized>(
    input: &S,
    attrs: &[AttributeSpec],
    label: &str,
    classes: &[f64],
) -> Result<CatData> {
    let path = input.name();
    let specs: Vec<AttributeSpec> = if attrs.is_empty() {
        input
            .numeric_columns()?
            .into_iter()
            .filter(|c| c != label)
            .map(|name| AttributeSpec { name, bins: None })
            .collect()
    } else {
        attrs.to_vec()
    };
    if specs.is_empty() {
        return Err(Error::format(path, "no attribute columns"));
    }
    if classes.len() < 2 {
        return Err(Error::param("classes", "declare at least two classes"));
    }
    let y = input.numeric(label)?;
    // Zero rows is read like any data set: only the tree refuses it, where n is public.
    let n = y.len();
    let classes_idx = y
        .iter()
        .enumerate()
        .map(|(row, v)| {
            classes
                .iter()
                .position(|c| c == v)
                .map(|i| i as u16)
                .ok_or_else(|| Error::Value {
                    path: path.to_path_buf(),
                    column: label.to_string(),
                    row,
                    msg: format!("the class value is not among the declared classes {classes:?}"),
                })
        })
        .collect::<Result<Vec<u16>>>()?;
    let m = specs.len();
    let mut codes = vec![0u16; n * m];
    let mut domains = Vec::with_capacity(m);
    for (j, s) in specs.iter().enumerate() {
        let v = input.numeric(&s.name)?;
        if v.len() != n {
            return Err(Error::Schema {
                path: path.to_path_buf(),
                column: s.name.clone(),
                msg: "its row count differs from the label column's".into(),
            });
        }
        for (i, &x) in v.iter().enumerate() {
            codes[i * m + j] = s.code(x).ok_or_else(|| Error::Value {
                path: path.to_path_buf(),
                column: s.name.clone(),
                row: i,
                msg: format!(
                    "the value is not 0 or 1; declare bins as {}:LO:HI:BINS",
                    s.name
                ),
            })?;
        }
        domains.push(s.domain());
    }
    Ok(CatData {
        codes,
        n,
        m,
        domains,
        names: specs.into_iter().map(|s| s.name).collect(),
        classes: classes_idx,
        class_labels: classes.iter().map(|c| c.to_string()).collect(),
    })
}

/// Categorical training data: row-major attribute codes and class codes.
#[derive(Debug, Clone)]
pub struct CatData {
    /// Row-major attribute codes, `n x m`.
    pub codes: Vec<u16>,
    /// Rows.
    pub n: usize,
    /// Attributes.
    pub m: usize,
    /// Number of values of each attribute.
    pub domains: Vec<usize>,
    /// Attribute names.
    pub names: Vec<String>,
    /// Each row's class code.
    pub classes: Vec<u16>,
    /// The declared class values, by code.
    pub class_labels: Vec<String>,
}

impl CatData {
    /// The code of attribute `attr` in row `row`.
    pub fn code(&self, row: usize, attr: usize) -> usize {
        self.codes[row * self.m + attr] as usize
    }

    /// Check that the codes, classes and sizes agree.
    pub fn check(&self) -> Result<()> {
        if self.codes.len() != self.n * self.m || self.classes.len() != self.n {
            return Err(Error::param("tree data", "codes do not match n x m"));
        }
        if self.class_labels.len() < 2 {
            return Err(Error::param("classes", "need at least two classes"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_binary_and_binned_attributes_and_checks_classes() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("t.csv");
        std::fs::write(&p, "a,age,label\n1,25,1\n0,70,-1\n1,-3,1\n").expect("write");
        let specs: Vec<AttributeSpec> = ["a", "age:0:100:4"]
            .iter()
            .map(|s| s.parse().expect("spec"))
            .collect();
        let d = read_categorical_data(&p, &specs, "label", &[-1.0, 1.0]).expect("reads");
        assert_eq!(d.codes, vec![1, 1, 0, 2, 1, 0]);
        assert_eq!(d.domains, vec![2, 4]);
        assert_eq!(d.classes, vec![1, 0, 1]);
        let e = read_categorical_data(&p, &[], "label", &[-1.0, 1.0]).expect_err("age not 0/1");
        assert!(
            e.to_string().contains("age") && e.to_string().contains("BINS"),
            "{e}"
        );
        let e = read_categorical_data(&p, &specs, "label", &[0.0, 1.0]).expect_err("-1");
        assert!(e.to_string().contains("declared classes"), "{e}");
        assert!("x:1:0:3".parse::<AttributeSpec>().is_err());
    }
}
