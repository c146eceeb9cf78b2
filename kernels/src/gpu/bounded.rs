//! WGSL whose every loop is shown to end, compiled without wgpu's loop counters.
//!
//! wgpu adds a counter to every shader loop (`force_loop_bounding`): an infinite loop is
//! undefined behaviour in SPIR-V, and the counter makes it end. That is a 64-bit counter
//! decremented and tested on every iteration of every loop, the limbs program's product
//! loop included. [`BoundedWgsl::new`] accepts a source only when every loop in it has the
//! form `for (var V = INIT; V < BOUND; V++) { BODY }` with `BOUND` a literal or an
//! immutable `let`, `V` never assigned or addressed in `BODY`, and no `loop` or `while`:
//! such a loop runs at most `BOUND` times (`V + 1 <= BOUND` never wraps). Only then is the
//! source compiled with the counter off (`gpu/context.rs`, the one `unsafe` call, citing
//! this check); bounds checks and division checks stay on.

use crate::error::KernelError;

/// A WGSL source whose loops passed [`loops_end`].
#[derive(Debug, Clone)]
pub(crate) struct BoundedWgsl(String);

impl BoundedWgsl {
    /// The source, when every loop in it provably ends.
    pub(crate) fn new(src: String) -> Result<Self, KernelError> {
        loops_end(&src).map_err(|why| {
            KernelError::Validation(format!(
                "a shader meant to run without loop counters: {why}"
            ))
        })?;
        Ok(Self(src))
    }

    /// The checked source.
    pub(crate) fn source(&self) -> &str {
        &self.0
    }
}

/// The source without `//` comments.
fn strip_comments(src: &str) -> String {
    src.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Byte offsets where `word` occurs as a whole identifier.
fn occurrences<'a>(src: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    src.match_indices(word).filter_map(move |(at, _)| {
        let before = src[..at].chars().next_back();
        let after = src[at + word.len()..].chars().next();
        (!before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)).then_some(at)
    })
}

/// The offset just past the bracket closing the one at `open` (`(`/`)` or `{`/`}`).
fn matching(src: &str, open: usize) -> Option<usize> {
    let (o, c) = match src[open..].chars().next()? {
        '(' => ('(', ')'),
        '{' => ('{', '}'),
        _ => return None,
    };
    let mut depth = 0usize;
    for (i, ch) in src[open..].char_indices() {
        if ch == o {
            depth += 1;
        } else if ch == c {
            depth -= 1;
            if depth == 0 {
                return Some(open + i + 1);
            }
        }
    }
    None
}

/// Whether `bound` is a literal (`16u`), a `const`, or a `let` the source never declares
/// as a `var` (WGSL's `const` and `let` cannot change).
fn fixed_bound(src: &str, bound: &str) -> bool {
    let literal = bound.trim_end_matches('u');
    if !literal.is_empty() && literal.chars().all(|c| c.is_ascii_digit()) {
        return true;
    }
    let declared = ["let", "const"]
        .iter()
        .any(|k| src.contains(&format!("{k} {bound} =")) || src.contains(&format!("{k} {bound}:")));
    bound.chars().all(is_ident_char) && declared && !src.contains(&format!("var {bound}"))
}

/// Whether `body` assigns or addresses `v` (`v =`, `v +=`, `v++`, `&v`, ...).
fn touches(body: &str, v: &str) -> bool {
    occurrences(body, v).any(|at| {
        let after = body[at + v.len()..].trim_start();
        let before = body[..at].trim_end();
        (before.ends_with('&') && !before.ends_with("&&"))
            || after.starts_with("++")
            || after.starts_with("--")
            || (after.starts_with('=') && !after.starts_with("=="))
            || ["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]
                .iter()
                .any(|op| after.starts_with(op))
    })
}

/// `Ok` when every loop of `src` ends (see the module's documentation), else why not.
pub(crate) fn loops_end(src: &str) -> Result<(), String> {
    let src = strip_comments(src);
    for word in ["loop", "while", "continuing"] {
        if occurrences(&src, word).next().is_some() {
            return Err(format!("it has a `{word}`"));
        }
    }
    for at in occurrences(&src, "for") {
        let open = at + src[at..].find('(').ok_or("a `for` without a header")?;
        let close = matching(&src, open).ok_or("an unclosed `for` header")?;
        let header = &src[open + 1..close - 1];
        let parts: Vec<&str> = header.split(';').map(str::trim).collect();
        let [init, cond, step] = parts[..] else {
            return Err(format!("the loop `for ({header})` is not init; test; step"));
        };
        let var = init
            .strip_prefix("var ")
            .and_then(|r| r.split(['=', ':']).next())
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.chars().all(is_ident_char))
            .ok_or_else(|| format!("the loop `for ({header})` does not declare its counter"))?;
        let bound = cond
            .strip_prefix(var)
            .and_then(|r| r.trim_start().strip_prefix('<'))
            .map(str::trim)
            .filter(|b| !b.starts_with('='))
            .ok_or_else(|| format!("the loop `for ({header})` does not test `{var} < bound`"))?;
        if !fixed_bound(&src, bound) {
            return Err(format!(
                "the loop `for ({header})` has a bound that may change"
            ));
        }
        if step != format!("{var}++") && step != format!("{var} += 1u") {
            return Err(format!("the loop `for ({header})` does not step by one"));
        }
        let body_open = close + src[close..].find('{').ok_or("a `for` without a body")?;
        let body_close = matching(&src, body_open).ok_or("an unclosed `for` body")?;
        if touches(&src[body_open..body_close], var) {
            return Err(format!(
                "the loop `for ({header})` changes `{var}` in its body"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loops_that_end_pass() {
        let ok = "const CPL: u32 = 3u;\nfn f() {\n  for (var k = 0u; k < CPL; k++) { }\n  let np = P.a + 1u;\n  for (var i = 0u; i < 4u; i++) { x[i] = 0u; }\n\
                  for (var p = select(2u, 0u, w); p < np; p++) { let k = p / 5u; \
                  for (var e = 0u; e < 16u; e++) { y[e] = k; } }\n}";
        assert_eq!(loops_end(ok), Ok(()));
        for (bad, why) in [
            ("fn f() { loop { break; } }", "loop"),
            ("fn f() { while (true) { } }", "while"),
            (
                "fn f() { for (var i = 0u; i < 4u; i++) { i = 0u; } }",
                "changes",
            ),
            (
                "fn f() { for (var i = 0u; i < 4u; i++) { i -= 1u; } }",
                "changes",
            ),
            (
                "fn f() { for (var i = 0u; i < 4u; i++) { g(&i); } }",
                "changes",
            ),
            ("fn f() { for (var i = 0u; i <= 4u; i++) { } }", "bound"),
            ("fn f() { for (var i = 0u; i < n; i++) { } }", "may change"),
            (
                "fn f() { var n = 3u; let m = n; for (var i = 0u; i < n; i++) { } }",
                "may change",
            ),
            ("fn f() { for (var i = 0u; i < 4u; i += 2u) { } }", "step"),
            ("fn f() { for (var i = 9u; i > 4u; i--) { } }", "bound"),
            ("fn f() { for (;;) { } }", "counter"),
        ] {
            let got = loops_end(bad);
            assert!(
                got.as_ref().is_err_and(|e| e.contains(why)),
                "{bad}: {got:?} (wanted `{why}`)"
            );
        }
        // `&&` before the counter is a logical and, not its address.
        assert_eq!(
            loops_end("fn f() { for (var i = 0u; i < 4u; i++) { let b = a && i < 2u; } }"),
            Ok(())
        );
        // Comments and names that contain `for` or `loop` do not count.
        assert_eq!(
            loops_end("// a loop, while\nfn before_loop_x() { let format = 1u; }"),
            Ok(())
        );
    }

    /// Every size of the limbs program passes, so it runs without loop counters.
    #[test]
    fn the_limbs_program_passes() {
        for words in [1, 4, 64, 128, crate::montgomery::MAX_WORDS] {
            let src = crate::montgomery::limbs::source(words);
            assert_eq!(loops_end(&src), Ok(()), "{words} words");
        }
    }
}
