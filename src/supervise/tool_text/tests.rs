use super::*;

fn pattern(text: &str) -> Option<&'static str> {
    detect(text).map(|t| t.pattern)
}

/// Each family's way of writing a call in plain text, named so a failure says which.
#[test]
fn xml_calls_of_each_model_family() {
    let cases = [
        (
            "qwen <function=…>",
            "I'll fix the import now.\n\n<function=edit>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>",
            "xml-function-equals",
        ),
        (
            "claude <invoke>",
            "Let me run the tests.\n<invoke name=\"Bash\">\n<parameter name=\"command\">cargo test</parameter>\n</invoke>",
            "xml-invoke",
        ),
        (
            "hermes <tool_call> with JSON",
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}}\n</tool_call>",
            "xml-tool-call",
        ),
        (
            "glm <tool_call> with <arg_key>",
            "Now I need to look at the config.<tool_call>read\n<arg_key>file_path</arg_key>\n<arg_value>/app/config.toml</arg_value>\n</tool_call>",
            "xml-tool-call",
        ),
    ];
    for (family, text, want) in cases {
        assert_eq!(pattern(text), Some(want), "{family}");
    }
}

#[test]
fn a_tag_name_in_a_sentence_is_not_a_call() {
    assert_eq!(pattern("The parser splits the stream at every <tool_call> tag and keeps the rest as text."), None);
}

#[test]
fn special_tokens() {
    let deepseek = "Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>bash";
    assert_eq!(pattern(deepseek), Some("special-token"));
    assert_eq!(pattern("[TOOL_CALLS][{\"name\": \"ls\", \"arguments\": {}}]"), Some("special-token"));
    assert_eq!(pattern("The chat template ends each turn with <|im_end|> and starts with <|im_start|>."), None);
}

#[test]
fn truncated_tags_at_the_end() {
    assert_eq!(pattern("I will now update the handler to return 404.\n\n<function=edit"), Some("xml-function-equals"));
    assert_eq!(pattern("Running the build to see the remaining errors.\n<invoke name=\"Bash\""), Some("xml-invoke"));
    assert_eq!(pattern("Running the build to see the remaining errors.\n<tool_c"), Some("xml-truncated"));
    assert_eq!(pattern("Let me apply the change to the router module now.\n<inv"), None, "too short to tell");
}

#[test]
fn json_calls() {
    let cases = [
        (
            "{\"type\": \"function\", \"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}}",
            "json-type-function",
        ),
        ("Calling: {\"name\": \"Bash\", \"arguments\": {\"command\": \"cargo test\"}}", "json-name-arguments"),
        ("Next step {\"tool\": \"read_file\", \"parameters\": {\"path\": \"a.rs\"}}", "json-tool-input"),
        ("Next step {\"tool_name\": \"Read\", \"input\": {\"file_path\": \"a.rs\"}}", "json-tool-input"),
        (
            "Step two: {\"function\": {\"name\": \"grep\", \"arguments\": {\"pattern\": \"TODO\"}}}",
            "json-function-object",
        ),
        ("{\"action\": \"Bash\", \"action_input\": \"ls -la /tmp\"} as planned", "json-action-input"),
        ("Running the tests now: {\"name\": \"Bash\", \"arguments\": {\"command\": \"cargo te", "json-truncated"),
    ];
    for (text, want) in cases {
        assert_eq!(pattern(text), Some(want), "{text}");
    }
}

#[test]
fn json_that_is_data_is_not_a_call() {
    let cases = [
        "The manifest is {\"name\": \"my-app\", \"version\": \"1.0.0\"} after the bump.",
        "The endpoint returns {\"id\": 7, \"name\": \"Widget\", \"price\": 9.99} for a hit.",
        "A definition: {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}",
        "{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"x\", \"parameters\": {}}}",
        "The log line {\"name\": \"worker\", \"input\": \"queue-7\"} shows the consumer.",
        "{\"name\": \"hello world\", \"arguments\": {\"a\": 1}} is a sentence, not a tool",
    ];
    for text in cases {
        assert_eq!(pattern(text), None, "{text}");
    }
}

#[test]
fn code_is_never_a_call() {
    let fenced = "Example:\n```xml\n<invoke name=\"Bash\">\n<parameter name=\"command\">ls</parameter>\n</invoke>\n```\nThat is the format.";
    assert_eq!(pattern(fenced), None);
    let tilde = "Example:\n~~~\n<function=edit>\n</function>\n~~~\nDone explaining.";
    assert_eq!(pattern(tilde), None);
    let inline = "The model wrote `<function=edit>` and `{\"name\": \"Bash\", \"arguments\": {}}` as text.";
    assert_eq!(pattern(inline), None);
}

#[test]
fn text_after_an_unclosed_fence_is_code() {
    let text = "Here is the handler:\n```python\ndef f():\n    return {\"name\": \"Bash\", \"arguments\": {\"c\": 1}}\n<function=edit>";
    assert_eq!(pattern(text), None);
}

#[test]
fn short_texts_are_ignored() {
    assert_eq!(pattern("<tool_call>"), None);
    assert_eq!(pattern("  <function=x>  "), None);
}

#[test]
fn thinking_needs_closed_tags() {
    let musing =
        "The user wants the file read. I should emit <function=read_file> with the path, then look at imports.";
    assert!(detect(musing).is_some());
    assert_eq!(detect_in_thinking(musing), None);
    let trapped = "I need to read it.\n<function=read_file>\n<parameter=path>src/lib.rs</parameter>\n</function>";
    assert_eq!(detect_in_thinking(trapped).map(|t| t.pattern), Some("xml-function-equals"));
    let json = "Let me call {\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}} now.";
    assert_eq!(detect_in_thinking(json).map(|t| t.pattern), Some("json-name-arguments"));
    assert_eq!(detect_in_thinking("I'll read the file now, then the tests.\n<function=read"), None);
}

#[test]
fn excerpt_is_short_and_around_the_match() {
    let text = format!("{}\n<function=edit>\n{}", "a".repeat(500), "b".repeat(500));
    let found = detect(&text).expect("a match");
    assert!(found.excerpt.chars().count() <= 200);
    assert!(found.excerpt.contains("<function=edit>"));
    let multibyte = format!("{}<function=edit>{}", "é".repeat(100), "ü".repeat(300));
    assert!(detect(&multibyte).is_some_and(|t| t.excerpt.chars().count() <= 200));
}

#[test]
fn many_braces_stay_cheap() {
    let text = "{".repeat(100_000);
    assert_eq!(pattern(&text), None);
}

fn corpus(kind: &str) -> Vec<(String, String)> {
    crate::testkit::corpus(&format!("tool-text/{kind}"))
}

#[test]
fn corpus_positives_are_all_detected() {
    let files = corpus("positive");
    assert!(files.len() >= 20, "only {} positives", files.len());
    let missed: Vec<&str> = files.iter().filter(|(_, t)| detect(t).is_none()).map(|(n, _)| n.as_str()).collect();
    assert!(missed.is_empty(), "missed: {missed:?}");
}

#[test]
fn corpus_negatives_are_never_detected() {
    let files = corpus("negative");
    assert!(files.len() >= 20, "only {} negatives", files.len());
    let flagged: Vec<String> = files
        .iter()
        .filter_map(|(n, t)| detect(t).map(|found| format!("{n}: {} {:?}", found.pattern, found.excerpt)))
        .collect();
    assert!(flagged.is_empty(), "flagged: {flagged:#?}");
    let in_thinking: Vec<&str> =
        files.iter().filter(|(_, t)| detect_in_thinking(t).is_some()).map(|(n, _)| n.as_str()).collect();
    assert!(in_thinking.is_empty(), "flagged as thinking: {in_thinking:?}");
}

/// The trigger-byte shortcut never changes an answer: on every corpus text the
/// shortcut and the full scan agree, and with the trigger bytes taken out no text
/// matches in the full scan either.
#[test]
fn the_trigger_byte_shortcut_changes_no_answer() {
    let texts: Vec<String> = corpus("positive").into_iter().chain(corpus("negative")).map(|(_, t)| t).collect();
    for text in &texts {
        for mode in [Mode::Message, Mode::Thinking] {
            assert_eq!(super::scan(text, mode), super::scan_masked(text, mode), "{text:?}");
            let stripped: String = text.chars().filter(|c| !matches!(c, '<' | '[' | '{')).collect();
            assert_eq!(super::scan_masked(&stripped, mode), None, "{stripped:?}");
        }
    }
    let prose = "Reading src/run/attempt.rs to see where the per-line work happens; next the parser.";
    assert_eq!(detect(prose), None);
    assert_eq!(pattern("[TOOL_CALLS][{\"name\": \"ls\", \"arguments\": {}}]"), Some("special-token"));
}

/// The [`may_hold_a_call`] shortcut changes no answer on any line of the corpus
/// either (a text agent's events are lines), finds calls whose keys are escapes,
/// and lets ordinary code skip the full scan.
#[test]
fn the_needle_shortcut_changes_no_answer_line_by_line() {
    let texts: Vec<String> = corpus("positive").into_iter().chain(corpus("negative")).map(|(_, t)| t).collect();
    for line in texts.iter().flat_map(|t| t.lines()) {
        for mode in [Mode::Message, Mode::Thinking] {
            assert_eq!(super::scan(line, mode), super::scan_masked(line, mode), "{line:?}");
        }
    }
    let escaped = "{\"n\\u0061me\": \"Bash\", \"arguments\": {\"command\": \"ls -la\"}}";
    assert_eq!(pattern(escaped), Some("json-name-arguments"));
    let code = "    let v: Vec<String> = map.iter().map(|(k, v)| format!(\"{k}={v}\")).collect::<Vec<_>>();";
    assert!(!super::may_hold_a_call(code));
}

/// Each needle is needed: a call that holds it and no other one.
#[test]
fn every_needle_is_the_only_one_of_some_call() {
    let witnesses = [
        "I will now update the handler to return 404.\n\n<function=edit",
        "Running the build to see the remaining errors.\n<invoke name=\"Bash\"",
        "Now writing the new config file, then a reload.\n<para",
        "Running the build to see the remaining errors.\n<tool_c",
        "Closing the call I started in the last message.\n</function",
        "Calling the shell tool to list the files now.<|tool_call|>",
        "Let me check.<｜tool▁calls▁begin｜>function<｜tool▁sep｜>bash",
        "Running the full test suite to check the fix.\n<antml:invoke name=\"Bash\">",
        "[TOOL_CALLS] the model printed its call here as plain text",
        "{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls -la\"}}",
        "{\"tool\": \"Bash\", \"input\": {\"command\": \"ls -la\"}}",
        "{\"action\": \"Search\", \"action_input\": \"weather in Paris\"}",
        "{\"function\": {\"input\": {\"command\": \"ls",
        "{\"type\": \"x\", \"input\": {\"command\": \"ls",
        "{\"n\\u0061me\": \"Bash\", \"arguments\": {\"command\": \"ls -la\"}}",
        "<read_file>\n<path>src/main.rs",
    ];
    let needles: Vec<&str> =
        NEEDLES.split_whitespace().chain(TOOL_TAGS.iter().map(|(open, _)| open.as_str())).collect();
    for needle in NEEDLES.split_whitespace().chain(["<read_file>"]) {
        let Some(text) = witnesses.iter().find(|w| w.contains(needle)) else { panic!("no witness of {needle}") };
        let held: Vec<&&str> = needles.iter().filter(|n| text.contains(**n)).collect();
        assert_eq!(held, [&needle], "{text:?}");
        assert!(super::scan_masked(text, Mode::Message).is_some(), "{text:?}");
    }
}
