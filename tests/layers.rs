//! The crates' module graphs: no module imports one that imports it back, and in the core
//! no module imports from a layer above its own.
//!
//! A module's imports are the `crate::…` and `super::…` paths in its code (comments and
//! string literals aside), `use` trees included; each is resolved to the module file it
//! names (through the crate root's `pub use` re-exports for `crate::Item`). A reference to
//! a module's own file or its inline test module is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The core's layers, lowest first: a module of `src/<layer>/` may import from its own
/// layer and the ones before it. `serving` and `analysis` both stand on `stores` and not
/// on each other.
const CORE_LAYERS: &[&[&str]] = &[
    &["values"],
    &["algorithms"],
    &["stores"],
    &["serving", "analysis"],
];

/// A module path such as `["stores", "keyed"]`; the crate root is `[]`.
type Module = Vec<String>;

/// Every module file of the crate whose sources are in `src`, by module path.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut found = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("a readable source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).expect("under src");
            let mut module: Module = relative
                .with_extension("")
                .iter()
                .map(|part| part.to_string_lossy().into_owned())
                .collect();
            let last = module.last().map(String::as_str);
            if matches!(last, Some("mod" | "lib" | "main")) {
                module.pop();
            }
            // A binary's other roots (src/bin/*.rs) would be crates of their own.
            if relative.starts_with("bin") {
                continue;
            }
            found.insert(module, path);
        }
    }
    found
}

/// `text` with comments, string and char literals blanked out, lines kept.
fn code_only(text: &str) -> String {
    let bytes: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let at = |n: usize| bytes.get(n).copied();
        let rest = |n: usize| at(i + n);
        match bytes[i] {
            '/' if rest(1) == Some('/') => {
                while i < bytes.len() && bytes[i] != '\n' {
                    i += 1;
                }
            }
            '/' if rest(1) == Some('*') => {
                let mut depth = 0;
                while i < bytes.len() {
                    if bytes[i] == '/' && at(i + 1) == Some('*') {
                        depth += 1;
                        i += 2;
                    } else if bytes[i] == '*' && at(i + 1) == Some('/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if bytes[i] == '\n' {
                            out.push('\n');
                        }
                        i += 1;
                    }
                }
            }
            'r' if rest(1) == Some('#') || (rest(1) == Some('"') && !ident_before(&bytes, i)) => {
                // A raw string: r"…", r#"…"#, ….
                let mut j = i + 1;
                let mut hashes = 0;
                while bytes.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if bytes.get(j) != Some(&'"') {
                    out.push(bytes[i]);
                    i += 1;
                    continue;
                }
                j += 1;
                loop {
                    match bytes.get(j) {
                        None => break,
                        Some('"') if (1..=hashes).all(|h| bytes.get(j + h) == Some(&'#')) => {
                            j += 1 + hashes;
                            break;
                        }
                        Some('\n') => out.push('\n'),
                        _ => {}
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                i = j;
            }
            '"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != '"' {
                    if bytes[i] == '\\' {
                        i += 1;
                    } else if bytes[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A char literal ('x', '\n', '"'), not a lifetime ('a).
            '\'' if rest(2) == Some('\'') || (rest(1) == Some('\\')) => {
                i += 1;
                while i < bytes.len() && bytes[i] != '\'' {
                    if bytes[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

fn ident_before(bytes: &[char], i: usize) -> bool {
    i > 0 && (bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_')
}

/// The paths a piece of code names from `crate::` or `super::`, each as its segments with
/// the anchor first (`["crate", "stores", "keyed", "KeyedLimiter"]`), `use` trees
/// expanded.
fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        let anchor = ["crate", "super"].into_iter().find(|anchor| {
            let end = i + anchor.len();
            starts_word
                && chars[i..].starts_with(&anchor.chars().collect::<Vec<_>>())
                && chars.get(end) == Some(&':')
                && chars.get(end + 1) == Some(&':')
        });
        match anchor {
            Some(anchor) => {
                let mut j = i + anchor.len();
                let mut prefix = vec![anchor.to_string()];
                // `super::super::x`
                while chars[j..].starts_with(&[':', ':', 's', 'u', 'p', 'e', 'r', ':', ':']) {
                    prefix.push("super".into());
                    j += 7;
                }
                j += 2;
                let mut here = Vec::new();
                j = tree(&chars, j, prefix, &mut here);
                found.extend(here.into_iter().map(|path| (i, path)));
                i = j;
            }
            None => i += 1,
        }
    }
    found
}

/// Reads a use tree (or a plain path) at `at`, the path so far in `prefix`; returns where
/// it ends.
fn tree(chars: &[char], mut at: usize, prefix: Vec<String>, found: &mut Vec<Vec<String>>) -> usize {
    let skip_space = |at: &mut usize| {
        while chars.get(*at).is_some_and(|c| c.is_whitespace()) {
            *at += 1;
        }
    };
    skip_space(&mut at);
    if chars.get(at) == Some(&'{') {
        at += 1;
        loop {
            skip_space(&mut at);
            match chars.get(at) {
                Some('}') => return at + 1,
                Some(',') => at += 1,
                None => return at,
                _ => at = tree(chars, at, prefix.clone(), found),
            }
        }
    }
    let mut path = prefix;
    loop {
        let start = at;
        while chars
            .get(at)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_' || *c == '*')
        {
            at += 1;
        }
        if at > start {
            path.push(chars[start..at].iter().collect());
        }
        if chars.get(at) == Some(&':') && chars.get(at + 1) == Some(&':') {
            at += 2;
            if chars.get(at) == Some(&'{') {
                return tree(chars, at, path, found);
            }
        } else {
            found.push(path);
            return at;
        }
    }
}

/// The crate root's `pub use` re-exports: each name it makes public and the path it
/// names.
fn root_exports(root: &str) -> BTreeMap<String, Vec<String>> {
    let code = code_only(root);
    let mut exports = BTreeMap::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(rest) = statement
            .lines()
            .map(str::trim)
            .filter(|line| !line.starts_with("#["))
            .collect::<Vec<_>>()
            .join(" ")
            .strip_prefix("pub use ")
            .map(str::to_string)
        else {
            continue;
        };
        let mut found = Vec::new();
        let chars: Vec<char> = rest.trim_start_matches("crate::").chars().collect();
        tree(&chars, 0, vec!["crate".to_string()], &mut found);
        for path in found {
            if let Some(name) = path.last() {
                exports.insert(name.clone(), path);
            }
        }
    }
    exports
}

/// The module file that `path`, written in `from`, names: the longest prefix that is a
/// module, after `super` and the root's re-exports are resolved. `None` for a path into
/// another crate's item the root re-exports, or one this reading cannot place.
fn resolve(
    path: &[String],
    from: &Module,
    modules: &BTreeMap<Module, PathBuf>,
    exports: &BTreeMap<String, Vec<String>>,
    depth: usize,
) -> Option<Module> {
    let mut absolute: Module = Vec::new();
    let mut rest = path;
    if path.first().is_some_and(|s| s == "super") {
        // `from` is the module the path is written in, inline modules (a file's tests)
        // included: each `super` climbs one of them.
        absolute = from.clone();
        let supers = path.iter().take_while(|s| *s == "super").count();
        for _ in 0..supers {
            absolute.pop();
        }
        rest = &path[supers..];
    } else if path.first().is_some_and(|s| s == "crate") {
        rest = &path[1..];
    }
    absolute.extend(rest.iter().cloned());
    // The longest prefix that is a module.
    for len in (0..=absolute.len()).rev() {
        let prefix = &absolute[..len];
        if modules.contains_key(prefix) {
            if prefix.is_empty() && !absolute.is_empty() && depth < 4 {
                // `crate::Item`: follow the root's re-export, if it has one.
                let name = &absolute[0];
                return match exports.get(name) {
                    Some(target) if target != path => {
                        let mut target = target.clone();
                        target.extend(absolute[1..].iter().cloned());
                        resolve(&target, &Vec::new(), modules, exports, depth + 1)
                    }
                    _ => Some(Vec::new()),
                };
            }
            return Some(prefix.to_vec());
        }
    }
    None
}

/// The inline modules (`mod tests { … }`) that the character at `at` of `code` sits in,
/// outermost first.
fn inline_modules(code: &str, at: usize) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    // Each open brace, and the module it opens when it opens one.
    let mut open: Vec<Option<String>> = Vec::new();
    let mut i = 0;
    while i < at.min(chars.len()) {
        match chars[i] {
            '{' => {
                let before: String = chars[..i].iter().collect();
                let words: Vec<&str> = before.split_whitespace().rev().take(2).collect();
                let module = match words.as_slice() {
                    [name, "mod"] => Some(name.to_string()),
                    _ => None,
                };
                open.push(module);
            }
            '}' => {
                open.pop();
            }
            _ => {}
        }
        i += 1;
    }
    open.into_iter().flatten().collect()
}

/// The import graph of the crate in `src`: module → the modules it imports.
fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules = modules(src);
    let root = modules.get(&Vec::new()).expect("a crate root");
    let exports = root_exports(&fs::read_to_string(root).expect("the crate root"));
    let mut edges = BTreeMap::new();
    for (module, file) in &modules {
        let code = code_only(&fs::read_to_string(file).expect("a source file"));
        let mut targets = BTreeSet::new();
        // The root only declares modules and re-exports them; its imports are the API.
        if !module.is_empty() {
            for (at, path) in paths(&code) {
                let mut written_in = module.clone();
                written_in.extend(inline_modules(&code, at));
                if let Some(target) = resolve(&path, &written_in, &modules, &exports, 0) {
                    // A module declaring its children is not an import of them, nor a file
                    // naming its own items.
                    if !target.starts_with(module) && !target.is_empty() {
                        targets.insert(target);
                    }
                }
            }
        }
        edges.insert(module.clone(), targets);
    }
    edges
}

/// Every cycle's modules, as text, one per strongly connected component of more than one
/// module (Tarjan's algorithm).
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    struct Walk<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        found: Vec<String>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, module: &'a Module) {
            let next = self.index.len();
            self.index.insert(module, next);
            self.low.insert(module, next);
            self.stack.push(module);
            self.on_stack.insert(module);
            for target in self.graph.get(module).into_iter().flatten() {
                let Some((target, _)) = self.graph.get_key_value(target) else {
                    continue;
                };
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[module].min(self.low[target]);
                    self.low.insert(module, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[module].min(self.index[target]);
                    self.low.insert(module, low);
                }
            }
            if self.low[module] == self.index[module] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top.join("::"));
                    if top == module {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component.join(", "));
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for module in graph.keys() {
        if !walk.index.contains_key(module) {
            walk.visit(module);
        }
    }
    walk.found
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The source folders of the core and of every member crate.
fn crate_sources() -> Vec<PathBuf> {
    let mut sources = vec![repo().join("src")];
    let mut members: Vec<PathBuf> = fs::read_dir(repo().join("crates"))
        .expect("crates/")
        .map(|entry| entry.expect("an entry").path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    members.sort();
    sources.extend(members);
    sources
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut found = Vec::new();
    for src in crate_sources() {
        for circle in circles(&graph(&src)) {
            found.push(format!("{}: {circle}", src.display()));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn no_core_module_imports_from_a_layer_above_its_own() {
    let layer_of = |module: &Module| {
        let top = module.first()?;
        CORE_LAYERS
            .iter()
            .position(|layer| layer.contains(&top.as_str()))
    };
    let mut found = Vec::new();
    let mut unplaced = Vec::new();
    for (module, targets) in graph(&repo().join("src")) {
        if module.is_empty() {
            continue;
        }
        let Some(from) = layer_of(&module) else {
            unplaced.push(module.join("::"));
            continue;
        };
        for target in targets {
            let to = layer_of(&target);
            let same_layer_sibling = to == Some(from) && target.first() != module.first();
            if to.is_none_or(|to| to > from) || same_layer_sibling {
                found.push(format!(
                    "{} imports {}",
                    module.join("::"),
                    target.join("::")
                ));
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules outside every layer of CORE_LAYERS: {unplaced:?}"
    );
    assert!(
        found.is_empty(),
        "imports up or across:\n{}",
        found.join("\n")
    );
}

/// The reading itself: a planted circle and a planted upward import are found, and what
/// sits in comments or strings is not read as an import.
#[test]
fn the_reading_finds_a_planted_circle_and_ignores_comments() {
    let scratch = std::env::temp_dir().join(format!("trickle-layers-{}", std::process::id()));
    let src = scratch.join("src");
    fs::create_dir_all(src.join("low")).expect("a scratch crate");
    fs::write(
        src.join("lib.rs"),
        "mod low;\nmod high;\npub use low::a::A;\n",
    )
    .expect("lib.rs");
    fs::write(
        src.join("low/mod.rs"),
        "pub(crate) mod a;\npub(crate) mod b;\n",
    )
    .expect("mod.rs");
    fs::write(
        src.join("low/a.rs"),
        "use crate::{high::H, low::b::B};\npub struct A;\n",
    )
    .expect("a.rs");
    fs::write(
        src.join("low/b.rs"),
        "// use crate::high::H;\nconst S: &str = \"crate::high::H\";\npub struct B;\n",
    )
    .expect("b.rs");
    fs::write(
        src.join("high.rs"),
        "use super::low::a;\nfn f() -> crate::A { crate::A }\npub struct H;\n",
    )
    .expect("high.rs");
    let edges = graph(&src);
    let name = |text: &str| -> Module { text.split("::").map(String::from).collect() };
    assert_eq!(
        edges[&name("low::a")],
        BTreeSet::from([name("high"), name("low::b")])
    );
    assert_eq!(edges[&name("low::b")], BTreeSet::new());
    assert_eq!(edges[&name("high")], BTreeSet::from([name("low::a")]));
    assert_eq!(circles(&edges), vec!["high, low::a".to_string()]);
    fs::remove_dir_all(&scratch).expect("the scratch crate removed");
}
