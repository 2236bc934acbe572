//! docs/recovery.md names the function that decides each rule: every such name must
//! exist, so the document cannot point at code that moved or went.

use std::path::{Path, PathBuf};

/// The file of module `path` (`["step", "waits"]`), if it is one.
fn module_file(src: &Path, path: &[&str]) -> Option<PathBuf> {
    let base = path.iter().fold(src.to_path_buf(), |dir, seg| dir.join(seg));
    [base.with_extension("rs"), base.join("mod.rs")].into_iter().find(|f| f.is_file())
}

/// Whether `text` defines (or re-exports) `name` as a function, type or constant.
fn defines(text: &str, name: &str) -> bool {
    ["fn ", "struct ", "enum ", "trait ", "const ", "type "].iter().any(|kind| {
        text.match_indices(&format!("{kind}{name}")).any(|(at, found)| {
            let next = text[at + found.len()..].chars().next();
            next.is_none_or(|c| !c.is_alphanumeric() && c != '_')
        })
    }) || text.contains(&format!("::{name};"))
        || text.contains(&format!(" {name}}};"))
}

#[test]
fn every_function_docs_recovery_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (src, doc) = (root.join("src"), std::fs::read_to_string(root.join("docs/recovery.md")).unwrap());
    let mut checked = 0;
    let mut missing = Vec::new();
    for (i, quoted) in doc.split('`').enumerate() {
        let segs: Vec<&str> = quoted.split("::").collect();
        let code_path = i % 2 == 1
            && segs.len() > 1
            && segs.iter().all(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'));
        if !code_path || module_file(&src, &segs[..1]).is_none() {
            continue;
        }
        // The longest prefix that is a module; the rest is an item in it (a type and
        // its method, or a function).
        let at = (1..=segs.len()).rev().find(|&n| module_file(&src, &segs[..n]).is_some()).unwrap_or(1);
        let file = module_file(&src, &segs[..at]).unwrap_or_default();
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let items = &segs[at..];
        if !items.iter().all(|item| defines(&text, item)) {
            missing.push(quoted.to_string());
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} names found in docs/recovery.md");
    assert!(missing.is_empty(), "docs/recovery.md names what src/ does not define: {missing:?}");
}
