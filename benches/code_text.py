#!/usr/bin/env python3
"""Prints MEGABYTES (decimal) of realistic source code, the same bytes on every run:
what an agent prints when it `cat`s a code base. Rust as people write it: generics
(`Vec<String>`, `Result<T, E>`), braces and brackets on most lines, format strings,
`json!` literals, doc comments, tests. Every line of it reaches the tool-call-as-text
detector (it holds `<`, `[` or `{`), unlike `yes` prose.

Usage: code_text.py MEGABYTES   (benches/run.sh, the "code flood" row, writes it to a
file once and has the agent `cat` it: this interpreter's own ~26 MiB peak would
otherwise be the row's peak RSS, which is the max over ralph and its children)
"""

import random
import sys

WORDS = (
    "agent attempt buffer call chain checkpoint config cursor event excerpt file flood "
    "function handle input journal line lock name output parser path phase prompt "
    "reader record result session signal state status stream task text tool value writer"
).split()
TYPES = ["String", "u64", "usize", "bool", "PathBuf", "Vec<u8>", "Option<String>", "Duration"]


def ident(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(parts))


def camel(rng: random.Random) -> str:
    return "".join(w.capitalize() for w in ident(rng).split("_"))


def function(rng: random.Random) -> str:
    name, arg, ty, other = ident(rng), ident(rng, 1), rng.choice(TYPES), ident(rng, 1)
    kind = camel(rng)
    body = [
        f"/// Returns the {arg} of the {other}, or why it cannot.",
        f"pub(crate) fn {name}<T: AsRef<str>>({arg}: &[T], {other}: &mut HashMap<String, {ty}>) -> Result<{ty}, {kind}Error> {{",
        f"    let mut seen: Vec<&str> = Vec::with_capacity({arg}.len());",
        f"    for (i, item) in {arg}.iter().enumerate() {{",
        f"        if item.as_ref().starts_with('<') || {other}.contains_key(item.as_ref()) {{",
        f"            return Err({kind}Error::Invalid {{ at: i, what: format!(\"{{}} at {{i}}\", item.as_ref()) }});",
        "        }",
        "        seen.push(item.as_ref());",
        "    }",
        f"    let total = seen.iter().map(|s| s.len()).sum::<usize>();",
        f"    tracing::debug!(total, \"{name}: {{}} items\", seen.len());",
        f"    {other}.get(seen.first().copied().unwrap_or_default()).cloned().ok_or({kind}Error::Missing)",
        "}",
        "",
    ]
    return "\n".join(body)


def structure(rng: random.Random) -> str:
    kind = camel(rng)
    fields = [f"    pub {ident(rng)}: {rng.choice(TYPES)}," for _ in range(rng.randint(2, 6))]
    return "\n".join(
        [
            "#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]",
            '#[serde(rename_all = "snake_case")]',
            f"pub(crate) struct {kind} {{",
            *fields,
            "}",
            "",
            f"impl {kind} {{",
            f"    fn {ident(rng)}(&self) -> Option<&str> {{",
            f"        self.{ident(rng)}.as_deref().filter(|s| !s.is_empty())",
            "    }",
            "}",
            "",
        ]
    )


def test(rng: random.Random) -> str:
    name, key = ident(rng, 4), ident(rng, 1)
    return "\n".join(
        [
            "#[test]",
            f"fn {name}() {{",
            f'    let v = serde_json::json!({{"type": "{key}", "{ident(rng, 1)}": [1, 2, 3], "ok": true}});',
            f'    assert_eq!(v["type"], "{key}", "{{v:#}}");',
            f"    let map: BTreeMap<&str, Vec<usize>> = [(\"{key}\", vec![{rng.randint(0, 99)}])].into_iter().collect();",
            f"    assert!(map.get(\"{key}\").is_some_and(|v| v.len() == 1));",
            "}",
            "",
        ]
    )


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    total = int(float(sys.argv[1]) * 1000 * 1000)
    rng = random.Random(26)
    pieces, size = [], 0
    # 4 MB of distinct code, then printed again and again: the generator stays cheap
    # beside ralph, and 4 MB is more than any cache of ralph's.
    while size < 4 * 1000 * 1000:
        piece = rng.choice([function, function, structure, test])(rng) + "\n"
        pieces.append(piece)
        size += len(piece)
    block = "".join(pieces).encode()
    out = sys.stdout.buffer
    while total > 0:
        chunk = block[:total]
        out.write(chunk)
        total -= len(chunk)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
