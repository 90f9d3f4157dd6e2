//! Comparison of canonical JSON documents, as `shared/oracle/tp_compare.py`
//! does it: only the expected keys are compared (extra keys are fine),
//! `message` and `file` are ignored, an `error` compares by its `code`, and
//! symbolic sizes compare as expressions (equal at several random points).
//! `tpi test` and the project's own conformance test share this code.

use serde_json::Value;

/// The differences between an expected and an actual document, one readable
/// line each (`$.functions[2].outputs[0].output_type: expected "alias_of_input", got "non_alias"`).
pub fn diff(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_at(expected, actual, "$", &mut out);
    out
}

fn diff_at(expected: &Value, actual: &Value, path: &str, out: &mut Vec<String>) {
    match expected {
        Value::Object(e) => {
            let Value::Object(a) = actual else {
                out.push(format!("{path}: expected an object, got {}", short(actual)));
                return;
            };
            if e.contains_key("error") || a.contains_key("error") {
                let code = |m: &serde_json::Map<String, Value>| {
                    m.get("error")
                        .and_then(|x| x.get("code"))
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                let (ec, ac) = (code(e), code(a));
                if ec != ac {
                    out.push(format!(
                        "{path}.error.code: expected {}, got {}",
                        short(&ec),
                        short(&ac)
                    ));
                }
                for k in ["name", "eager"] {
                    if let Some(v) = e.get(k) {
                        diff_at(
                            v,
                            a.get(k).unwrap_or(&Value::Null),
                            &format!("{path}.{k}"),
                            out,
                        );
                    }
                }
                return;
            }
            for (k, v) in e {
                if k == "message" || k == "file" {
                    continue;
                }
                match a.get(k) {
                    None => out.push(format!("{path}.{k}: missing")),
                    Some(av) => diff_at(v, av, &format!("{path}.{k}"), out),
                }
            }
        }
        Value::Array(e) => {
            let Value::Array(a) = actual else {
                out.push(format!(
                    "{path}: expected {} items, got {}",
                    e.len(),
                    short(actual)
                ));
                return;
            };
            if e.len() != a.len() {
                out.push(format!(
                    "{path}: expected {} items, got {}",
                    e.len(),
                    a.len()
                ));
                return;
            }
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                diff_at(x, y, &format!("{path}[{i}]"), out);
            }
        }
        Value::Bool(_) | Value::Null => {
            if expected != actual {
                out.push(format!(
                    "{path}: expected {}, got {}",
                    short(expected),
                    short(actual)
                ));
            }
        }
        _ => {
            if matches!(actual, Value::Bool(_)) || !sym_equal(expected, actual) {
                out.push(format!(
                    "{path}: expected {}, got {}",
                    short(expected),
                    short(actual)
                ));
            }
        }
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 80 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(77).map_or(s.len(), |(i, _)| i)]
        )
    } else {
        s
    }
}

/// Ints and size expressions: equal as expressions over their symbols.
pub fn sym_equal(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    let text = |v: &Value| match v {
        Value::Number(n) => n.as_i64().map(|i| i.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    };
    let (Some(x), Some(y)) = (text(a), text(b)) else {
        return false;
    };
    let mut names: Vec<String> = Vec::new();
    for s in [&x, &y] {
        let mut cur = String::new();
        for c in s.chars().chain([' ']) {
            if c.is_ascii_alphanumeric() || c == '_' {
                cur.push(c);
            } else {
                if cur
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && !names.contains(&cur)
                {
                    names.push(cur.clone());
                }
                cur.clear();
            }
        }
    }
    // A fixed pseudo-random sequence of points in [2, 97].
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..8 {
        let env: Vec<(String, i64)> = names
            .iter()
            .map(|n| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (n.clone(), 2 + ((seed >> 33) % 96) as i64)
            })
            .collect();
        match (eval(&x, &env), eval(&y, &env)) {
            (Some(p), Some(q)) if p == q => {}
            _ => return false,
        }
    }
    true
}

/// Evaluates a size expression (`+ - * // % **`, parentheses, ints, names).
pub fn eval(expr: &str, env: &[(String, i64)]) -> Option<i64> {
    let tokens = tokenize(expr)?;
    let mut p = Parser {
        tokens,
        pos: 0,
        env,
    };
    let v = p.sum()?;
    (p.pos == p.tokens.len()).then_some(v)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(i64),
    Name(String),
    Op(&'static str),
}

fn tokenize(s: &str) -> Option<Vec<Tok>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i] as char;
        if c == ' ' {
            i += 1;
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && (b[i] as char).is_ascii_digit() {
                i += 1;
            }
            out.push(Tok::Num(s[st..i].parse().ok()?));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let st = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(s[st..i].to_string()));
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            let op = match two {
                "//" => "//",
                "**" => "**",
                _ => match c {
                    '+' => "+",
                    '-' => "-",
                    '*' => "*",
                    '%' => "%",
                    '(' => "(",
                    ')' => ")",
                    '/' => "/",
                    _ => return None,
                },
            };
            i += op.len();
            out.push(Tok::Op(op));
        }
    }
    Some(out)
}

struct Parser<'a> {
    tokens: Vec<Tok>,
    pos: usize,
    env: &'a [(String, i64)],
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos)
    }

    fn sum(&mut self) -> Option<i64> {
        let mut v = self.product()?;
        while let Some(Tok::Op(op @ ("+" | "-"))) = self.peek().cloned() {
            self.pos += 1;
            let r = self.product()?;
            v = if op == "+" {
                v.checked_add(r)?
            } else {
                v.checked_sub(r)?
            };
        }
        Some(v)
    }

    fn product(&mut self) -> Option<i64> {
        let mut v = self.unary()?;
        while let Some(Tok::Op(op @ ("*" | "//" | "%" | "/"))) = self.peek().cloned() {
            self.pos += 1;
            let r = self.unary()?;
            v = match op {
                "*" => v.checked_mul(r)?,
                "//" | "/" => {
                    if r == 0 {
                        return None;
                    }
                    v.div_euclid(r) - i64::from(r < 0 && v.rem_euclid(r) != 0)
                }
                _ => {
                    if r == 0 {
                        return None;
                    }
                    let m = v.rem_euclid(r);
                    if r < 0 && m != 0 {
                        m + r
                    } else {
                        m
                    }
                }
            };
        }
        Some(v)
    }

    fn unary(&mut self) -> Option<i64> {
        match self.peek() {
            Some(Tok::Op("-")) => {
                self.pos += 1;
                self.unary()?.checked_neg()
            }
            Some(Tok::Op("+")) => {
                self.pos += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Option<i64> {
        let base = self.atom()?;
        if let Some(Tok::Op("**")) = self.peek() {
            self.pos += 1;
            let e = self.unary()?;
            return base.checked_pow(u32::try_from(e).ok()?);
        }
        Some(base)
    }

    fn atom(&mut self) -> Option<i64> {
        let t = self.peek()?.clone();
        self.pos += 1;
        match t {
            Tok::Num(n) => Some(n),
            Tok::Name(n) => self.env.iter().find(|(k, _)| *k == n).map(|(_, v)| *v),
            Tok::Op("(") => {
                let v = self.sum()?;
                match self.peek() {
                    Some(Tok::Op(")")) => {
                        self.pos += 1;
                        Some(v)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expressions_compare_by_value() {
        assert!(sym_equal(&json!("4*n"), &json!("n*4")));
        assert!(sym_equal(&json!("n*m + 1"), &json!("1 + m*n")));
        assert!(sym_equal(&json!("(n//2)"), &json!("n//2")));
        assert!(!sym_equal(&json!("n"), &json!("m")));
        assert!(sym_equal(&json!(12), &json!(12)));
        assert!(!sym_equal(&json!(12), &json!("12*n")));
    }

    #[test]
    fn diff_ignores_extra_keys_and_messages() {
        let e = json!({"a": 1, "error": null, "b": {"message": "x", "code": "y"}});
        let a = json!({"a": 1, "extra": 2, "b": {"message": "other", "code": "y"}});
        assert!(diff(&json!({"a": 1, "b": {"message": "x"}}), &a).is_empty());
        let d = diff(
            &json!({"error": {"code": "view-stride"}}),
            &json!({"error": {"code": "broadcast"}}),
        );
        assert_eq!(d.len(), 1);
        let _ = e;
    }

    #[test]
    fn python_floor_semantics() {
        assert_eq!(eval("-7//2", &[]), Some(-4));
        assert_eq!(eval("-7 % 3", &[]), Some(2));
        assert_eq!(eval("2**3", &[]), Some(8));
    }
}
