//! The docs' curl walkthroughs, run as a reader runs them: a walkthrough's ```sh blocks in
//! order, in one bash process (so `TOKEN`, `S`, … carry from step to step), against a fresh
//! `atrium serve` with the defaults `cargo run --release` has (the dev profile: a SQLite file
//! in its working directory and the sandbox), on a free port. Every step must succeed; one
//! whose output the doc shows must print it, any other must get no 5xx from curl. The conventions
//! — what counts as a step's output, the `…` wildcard, skipped blocks — are in
//! docs/contributing-docs.md.
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What `<new password>` stands for (the README's tour sets it).
const NEW_PASSWORD: &str = "Walkthrough-Pass-2026";
/// How long one walkthrough (its server's start and all its steps) may take.
const DEADLINE: Duration = Duration::from_secs(300);
/// The placeholders a walkthrough may use: the password the server's first start prints, and
/// the one the README's tour sets.
const PLACEHOLDERS: [&str; 3] = ["<printed password>", "<admin's password>", "<new password>"];
/// The marker a skipped block carries on the line before its fence.
const SKIP: &str = "<!-- walkthrough: skip -->";

#[test]
fn readme_tour() {
    walkthrough("README.md", &[], &[]);
}

#[test]
fn payments() {
    walkthrough("docs/payments.md", &[], &[]);
}

/// orders.md starts "after the payment setup of payments.md".
#[test]
fn orders() {
    walkthrough("docs/orders.md", &["docs/payments.md"], &[]);
}

#[test]
fn partners() {
    walkthrough("docs/partners.md", &[], &[]);
}

#[test]
fn miniprogram() {
    walkthrough("docs/miniprogram.md", &[], &["zip"]);
}

#[test]
fn documents_api() {
    walkthrough("docs/documents-api.md", &[], &[]);
}

#[test]
fn payroll() {
    walkthrough("docs/payroll.md", &[], &["iconv"]);
}

/// One command of a walkthrough (it may span lines) and the output the doc shows for it.
#[derive(Debug)]
struct Step {
    doc: &'static str,
    /// The doc's line (1-based) where the command starts.
    line: usize,
    command: String,
    expected: Option<Expected>,
}

#[derive(Debug)]
struct Expected {
    line: usize,
    text: String,
}

/// Runs `doc`'s walkthrough, after those of `after` (in the same shell, on the same server),
/// and fails naming every step whose output is not what the doc shows.
fn walkthrough(doc: &'static str, after: &[&'static str], tools: &[&str]) {
    let needed: Vec<&str> = ["bash", "curl", "jq"].iter().chain(tools).copied().collect();
    let missing: Vec<&str> = needed.iter().copied().filter(|t| !installed(t)).collect();
    if !missing.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the walkthrough of {doc} needs {} on PATH ({} missing)",
            needed.join(", "),
            missing.join(", ")
        );
        return;
    }
    let started = Instant::now();
    let mut steps = Vec::new();
    for d in after.iter().chain([&doc]) {
        let text = std::fs::read_to_string(root().join(d)).unwrap();
        steps.extend(parse(d, &text).unwrap_or_else(|e| panic!("{d}: {e}")));
    }
    assert!(steps.iter().any(|s| s.doc == doc), "{doc} has no walkthrough steps");

    let dir = tempfile::Builder::new().prefix("atrium-walkthrough-").tempdir().unwrap();
    let server = serve(dir.path());
    let replace_address = |s: &str| s.replace("localhost:8080", &server.addr).replace("127.0.0.1:8080", &server.addr);
    let values = [server.password.as_str(), server.password.as_str(), NEW_PASSWORD];
    let mut script = String::from(PRELUDE);
    for (i, step) in steps.iter().enumerate() {
        let mut command = replace_address(&step.command);
        for (placeholder, value) in PLACEHOLDERS.iter().zip(values) {
            command = command.replace(placeholder, value);
        }
        if let Some(p) = unknown_placeholder(&command) {
            panic!("{}:{}: no value for the placeholder {p}", step.doc, step.line);
        }
        write!(
            script,
            "printf '\\n\\036walk-begin {i}\\n'; printf '\\n\\036walk-begin {i}\\n' >&2; echo '@walk-step {i}' >> \"$WALK_CURL_LOG\"; __walk_errs=\n\
             {command}\n\
             __walk_rc=$?; printf '\\n\\036walk-end {i} %s%s\\n' \"$__walk_rc\" \"$__walk_errs\"\n"
        )
        .unwrap();
    }
    let run = run_bash(dir.path(), &script, started + DEADLINE);
    let outcomes = outcomes(&run, steps.len());

    let mut failures = Vec::new();
    for (step, outcome) in steps.iter().zip(&outcomes) {
        let Some(outcome) = outcome else {
            let why =
                if run.timed_out { format!("it did not finish within {} s", DEADLINE.as_secs()) } else { "the shell ended in it".into() };
            let stderr = run.stderr.rsplit('\x1e').next().unwrap_or_default();
            failures.push(format!("{}:{}: {why}\n  $ {}\n  stderr:\n{}", step.doc, step.line, step.command, indent(stderr)));
            break;
        };
        let mut problems = Vec::new();
        if outcome.status != "0" {
            problems.push(format!("exit status {}", outcome.status));
        } else if !outcome.failed.is_empty() {
            problems.push(format!("a command of it failed (exit status {})", outcome.failed.join(", ")));
        }
        match &step.expected {
            Some(expected) => {
                let want = replace_address(&expected.text);
                if !matches(&want, &outcome.stdout) {
                    problems.push(format!(
                        "output differs from what line {} shows\n  expected:\n{}\n  actual:\n{}",
                        expected.line,
                        indent(&want),
                        indent(&outcome.stdout)
                    ));
                }
            }
            None => {
                let bad: Vec<&str> = outcome.http.iter().map(String::as_str).filter(|c| *c == "000" || c.starts_with('5')).collect();
                if !bad.is_empty() {
                    problems.push(format!(
                        "curl got HTTP {} (a step that shows no output must get an answer, and no 5xx)\n  output:\n{}",
                        bad.join(", "),
                        indent(&outcome.stdout)
                    ));
                }
            }
        }
        if !problems.is_empty() {
            let stderr = if outcome.stderr.trim().is_empty() { String::new() } else { format!("\n  stderr:\n{}", indent(&outcome.stderr)) };
            failures.push(format!("{}:{}: {}\n  $ {}{stderr}", step.doc, step.line, problems.join("; "), step.command));
        }
    }
    let took = started.elapsed().as_secs_f32();
    if !failures.is_empty() {
        let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect();
        panic!(
            "the walkthrough of {doc} is not what the server does ({} of {} steps failed, {took:.1} s):\n\n{}\n\nserver log (last lines):\n{}",
            failures.len(),
            steps.len(),
            failures.join("\n\n"),
            tail.join("\n")
        );
    }
    let own: Vec<&Step> = steps.iter().filter(|s| s.doc == doc).collect();
    let checked = own.iter().filter(|s| s.expected.is_some()).count();
    println!("{doc}: {} steps, {checked} of them with their output checked; {} steps run in {took:.1} s", own.len(), steps.len());
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn installed(tool: &str) -> bool {
    Command::new(tool).arg("--version").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn indent(s: &str) -> String {
    let s = s.trim_end();
    if s.is_empty() { "    (nothing)".into() } else { s.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n") }
}

// ---------------------------------------------------------------------------------------------
// Reading the doc

/// The steps of `text`'s ```sh blocks, in order, with the output each shows: a comment after
/// the command on its last line, or the comment lines right below it (up to a blank line or
/// the next command), or a ```json block right after the ```sh block (for its last step).
/// A block whose fence follows `<!-- walkthrough: skip -->` is left out.
fn parse(doc: &'static str, text: &str) -> Result<Vec<Step>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut steps: Vec<Step> = Vec::new();
    // The line after the last ```sh block run, and how many steps there were then.
    let mut after_sh: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].trim_start().strip_prefix("```") else {
            if lines[i].contains("<!-- walkthrough") && lines[i].trim() != SKIP {
                return Err(format!("line {}: the only walkthrough marker is {SKIP}", i + 1));
            }
            if lines[i].trim() == SKIP && lines[i + 1..].iter().find(|l| !l.trim().is_empty()).is_none_or(|l| l.trim() != "```sh") {
                return Err(format!("line {}: {SKIP} belongs right before a ```sh fence", i + 1));
            }
            i += 1;
            continue;
        };
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].trim_start().starts_with("```"))
            .ok_or_else(|| format!("line {}: the fence is never closed", i + 1))?;
        let skipped = lines[..i].iter().rev().find(|l| !l.trim().is_empty()).is_some_and(|l| l.trim() == SKIP);
        match info.trim() {
            "sh" if !skipped => {
                let before = steps.len();
                steps.extend(parse_block(doc, i, &lines[i + 1..end])?);
                after_sh = Some((end + 1, before));
            }
            "json" if after_sh.is_some_and(|(from, _)| lines[from..i].iter().all(|l| l.trim().is_empty())) => {
                let (_, before) = after_sh.unwrap();
                let step = steps.get_mut(before..).and_then(|s| s.last_mut()).ok_or("a ```json block after a ```sh block without steps")?;
                if step.expected.is_some() {
                    return Err(format!("line {}: the step at line {} shows its output twice", i + 1, step.line));
                }
                step.expected = Some(Expected { line: i + 2, text: lines[i + 1..end].join("\n") });
                after_sh = None;
            }
            _ => after_sh = None,
        }
        i = end + 1;
    }
    Ok(steps)
}

/// The steps of one ```sh block; `fence` is the 0-based index of its opening fence line.
fn parse_block(doc: &'static str, fence: usize, body: &[&str]) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut pending: Option<(usize, Vec<&str>)> = None;
    // Whether comment lines here are still the last step's output.
    let mut output_open = false;
    for (k, raw) in body.iter().enumerate() {
        let line = fence + k + 2;
        if let Some((_, command)) = &mut pending {
            command.push(raw);
        } else {
            let t = raw.trim();
            if t.is_empty() {
                output_open = false;
                continue;
            }
            if let Some(comment) = t.strip_prefix('#') {
                if output_open {
                    let step = steps.last_mut().unwrap();
                    let comment = comment.strip_prefix(' ').unwrap_or(comment);
                    let last_line = step.line + step.command.lines().count() - 1;
                    match &mut step.expected {
                        None => step.expected = Some(Expected { line, text: comment.to_owned() }),
                        Some(e) if e.line == last_line => {
                            return Err(format!(
                                "line {line}: the step at line {} shows its output after it and below it; a comment that is not output needs a blank line before it",
                                step.line
                            ));
                        }
                        Some(e) => {
                            e.text.push('\n');
                            e.text.push_str(comment);
                        }
                    }
                }
                continue;
            }
            pending = Some((line, vec![raw]));
        }
        let (start, command) = pending.as_ref().unwrap();
        let text = command.join("\n");
        // A placeholder may hold a quote (`<admin's password>`): bash sees its value.
        let neutral = PLACEHOLDERS.iter().fold(text.clone(), |t, p| t.replace(p, "value"));
        if complete(&neutral).map_err(|e| format!("line {start}: {e}"))? {
            let expected = trailing_comment(&neutral).map(|c| Expected { line, text: c });
            steps.push(Step { doc, line: *start, command: text, expected });
            pending = None;
            output_open = true;
        }
    }
    match pending {
        Some((start, _)) => Err(format!("line {start}: the command is never complete")),
        None => Ok(steps),
    }
}

/// Whether `text` is one or more whole commands: no line continuation or here-document left
/// open, and bash finds nothing missing (`bash -n`). Any other syntax error is an error.
fn complete(text: &str) -> Result<bool, String> {
    if text.trim_end().ends_with('\\') || open_heredoc(text) {
        return Ok(false);
    }
    let mut bash = Command::new("bash").arg("-n").stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    bash.stdin.take().unwrap().write_all(format!("{text}\n").as_bytes()).unwrap();
    let out = bash.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        Ok(true)
    } else if stderr.contains("unexpected end of file") || stderr.contains("unexpected EOF") {
        Ok(false)
    } else {
        Err(format!("bash -n: {}", stderr.trim()))
    }
}

/// Whether a here-document (`<<WORD`, `<<'WORD'`, `<<-WORD`) in `text` lacks its closing line.
fn open_heredoc(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    for (n, line) in lines.iter().enumerate() {
        let mut rest = *line;
        while let Some(at) = rest.find("<<") {
            let after = &rest[at + 2..];
            rest = after;
            if let Some(here_string) = after.strip_prefix('<') {
                rest = here_string;
                continue;
            }
            let word: String = after
                .trim_start_matches('-')
                .trim_start()
                .trim_start_matches(['\'', '"'])
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !word.is_empty() && !lines[n + 1..].iter().any(|l| l.trim() == word) {
                return true;
            }
        }
    }
    false
}

/// The comment after the command on the last line of `text`, if any: a `#` outside quotes at
/// the start of a word.
fn trailing_comment(text: &str) -> Option<String> {
    let last_start = text.rfind('\n').map_or(0, |n| n + 1);
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut prev = ' ';
    for (at, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if single {
            single = c != '\'';
        } else if c == '\\' {
            escaped = true;
        } else if double {
            double = c != '"';
        } else if c == '\'' {
            single = true;
        } else if c == '"' {
            double = true;
        } else if c == '#' && prev.is_whitespace() {
            let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n);
            if at >= last_start && !text[last_start..at].trim().is_empty() {
                return Some(text[at + 1..line_end].trim().to_owned());
            }
            // A comment line inside the command: skip to its end.
            return text[line_end..].strip_prefix('\n').and_then(trailing_comment);
        }
        prev = c;
    }
    None
}

/// A `<placeholder like this>` left in a command (words and spaces between angle brackets).
fn unknown_placeholder(command: &str) -> Option<&str> {
    let mut rest = command;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        if let Some(close) = after.find('>') {
            let inner = &after[..close];
            if inner.contains(' ') && inner.chars().all(|c| c.is_alphabetic() || c == ' ' || c == '\'') {
                return Some(&rest[open..open + close + 2]);
            }
        }
        rest = after;
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Comparing

/// Whether `actual` is what `expected` shows. `…` stands for any text. When `actual` is JSON (one
/// or more values, as jq prints them), whitespace outside strings does not count, so the doc
/// may show jq's indented output on one line (or a long line on several); otherwise the lines
/// must match one by one, trailing whitespace (and CR) aside.
fn matches(expected: &str, actual: &str) -> bool {
    if is_json(actual) {
        return glob(&squeeze(expected), &squeeze(actual));
    }
    let want: Vec<&str> = expected.trim_end().lines().map(str::trim_end).collect();
    let got: Vec<&str> = actual.trim_end().lines().map(str::trim_end).collect();
    want.len() == got.len() && want.iter().zip(&got).all(|(w, g)| glob(w, g))
}

fn is_json(s: &str) -> bool {
    let s = s.trim();
    !s.is_empty() && serde_json::Deserializer::from_str(s).into_iter::<serde_json::Value>().all(|v| v.is_ok())
}

/// `s` without whitespace outside JSON strings.
fn squeeze(s: &str) -> String {
    let (mut out, mut in_string, mut escaped) = (String::new(), false, false);
    for c in s.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// Whether `text` is `pattern` with each `…` standing for any text (also none).
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return pattern == text;
    }
    if text.len() < first.len() + last.len() || !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

// ---------------------------------------------------------------------------------------------
// Running

/// The top of each walkthrough's script: failures anywhere in a pipeline or a step count, and
/// curl notes each answer's status for the harness (in its own file; its output is untouched).
const PRELUDE: &str = r#"set -o pipefail -o errtrace
trap '__walk_errs="$__walk_errs, $?"' ERR
curl() { command curl -w '%{stderr}@walk-http %{http_code}\n' "$@" 2>>"$WALK_CURL_LOG"; }
"#;

/// A running `atrium serve` in a directory of its own.
struct Server {
    child: Child,
    addr: String,
    password: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `atrium serve` as `cargo run --release` starts it (the defaults: dev profile, sandbox,
/// `./atrium.db`), in `dir`, on a free port; bcrypt at its cheapest so logins are quick.
fn serve(dir: &Path) -> Server {
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_atrium"))
        .arg("serve")
        .current_dir(dir)
        .env_clear()
        .env("HOME", dir)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs([("ATRIUM_BIND", "127.0.0.1:0"), ("ATRIUM_BCRYPT_COST", "4"), ("ATRIUM_WORKERS", "2"), ("ATRIUM_LOG", "info")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // Reads (and keeps draining) its output, so it never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut password = None;
    let addr = loop {
        let line = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap_or_else(|_| {
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            panic!("the server did not say where it listens within 60 s:\n{log}")
        });
        if let Some(p) = line.split("with password: ").nth(1) {
            password = Some(p.trim().to_owned());
        }
        if let Some(rest) = line.strip_prefix("atrium is listening on http://") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    Server { child, addr, password: password.expect("a first start prints the admin's password") }
}

struct Run {
    stdout: String,
    stderr: String,
    curl_log: String,
    timed_out: bool,
}

/// Runs `script` with bash in `dir` (the server's directory: `atrium` commands find its
/// database there), the built binary first on PATH; kills it at `deadline`.
fn run_bash(dir: &Path, script: &str, deadline: Instant) -> Run {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_atrium")).parent().unwrap().to_path_buf();
    let path =
        std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
    let file = |name: &str| dir.join(format!("walkthrough.{name}"));
    std::fs::write(file("sh"), script).unwrap();
    std::fs::write(file("curl"), "").unwrap();
    let mut bash = Command::new("bash")
        .args(["--noprofile", "--norc"])
        .arg(file("sh"))
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir)
        .env("LANG", "C.UTF-8")
        .env("WALK_CURL_LOG", file("curl"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(file("out")).unwrap())
        .stderr(std::fs::File::create(file("err")).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let timed_out = loop {
        if bash.try_wait().unwrap().is_some() {
            break false;
        }
        if Instant::now() >= deadline {
            // The whole group: bash and whatever it is waiting for.
            let _ = Command::new("kill").args(["-KILL", &format!("-{}", bash.id())]).status();
            let _ = bash.wait();
            break true;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |name: &str| String::from_utf8_lossy(&std::fs::read(file(name)).unwrap_or_default()).into_owned();
    Run { stdout: read("out"), stderr: read("err"), curl_log: read("curl"), timed_out }
}

/// What one step did.
struct Outcome {
    stdout: String,
    stderr: String,
    /// Its exit status.
    status: String,
    /// The exit status of each command of it that failed (outside conditions).
    failed: Vec<String>,
    /// The HTTP status of each curl call of it (`000`: no answer).
    http: Vec<String>,
}

/// Each step's outcome, from the markers the script printed around it; `None` for a step that
/// did not finish.
fn outcomes(run: &Run, steps: usize) -> Vec<Option<Outcome>> {
    let section = |s: &str, i: usize| -> Option<String> {
        let begin = format!("\x1ewalk-begin {i}\n");
        let from = s.find(&begin)? + begin.len();
        let to = s[from..].find(&format!("\n\x1ewalk-begin {}\n", i + 1)).map_or(s.len(), |n| from + n);
        Some(s[from..to].to_owned())
    };
    let mut http: Vec<Vec<String>> = vec![Vec::new(); steps];
    let mut current = None;
    for line in run.curl_log.lines() {
        if let Some(i) = line.strip_prefix("@walk-step ") {
            current = i.trim().parse::<usize>().ok();
        } else if let (Some(code), Some(i)) = (line.strip_prefix("@walk-http "), current) {
            http[i].push(code.trim().to_owned());
        }
    }
    (0..steps)
        .map(|i| {
            let out = section(&run.stdout, i)?;
            let end = format!("\n\x1ewalk-end {i} ");
            let at = out.find(&end)?;
            let mut statuses = out[at + end.len()..].lines().next().unwrap_or_default().split(", ").map(str::to_owned);
            let status = statuses.next().unwrap_or_default();
            Some(Outcome {
                stdout: out[..at].to_owned(),
                stderr: section(&run.stderr, i).unwrap_or_default().trim_end().to_owned(),
                status,
                failed: statuses.collect(),
                http: std::mem::take(&mut http[i]),
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The harness itself

#[test]
fn outputs_are_found_below_after_and_in_json_blocks() {
    let doc = "intro\n\n<!-- walkthrough: skip -->\n```sh\ncargo run\n```\n\n```sh\nX=$(echo 1)\ncurl -s a \\\n  -d '{\"a # b\":1}' | jq .a   # 1\n# not output: a blank line is missing\n\n# prose\necho \"two\nlines\"\n# two\n# lines\n\nf() {   # a comment\n  echo hi\n}\necho '{}'\n```\n\n```json\n{}\n```\n";
    let err = parse("t.md", doc).unwrap_err();
    assert!(err.contains("after it and below it"), "{err}");
    let doc = doc.replace("# not output: a blank line is missing\n", "");
    let steps = parse("t.md", &doc).unwrap();
    let shown: Vec<(usize, Option<&str>)> = steps.iter().map(|s| (s.line, s.expected.as_ref().map(|e| e.text.as_str()))).collect();
    assert_eq!(shown, [(9, None), (10, Some("1")), (14, Some("two\nlines")), (19, None), (22, Some("{}"))]);
}

#[test]
fn wildcards_and_json_whitespace() {
    assert!(matches(r#"{"a": 1, "b": "x…z"}"#, "{\"a\":1,\"b\":\"xyyz\"}\n"));
    assert!(matches("{\"items\": [1,\n 2, …]}", "{\n  \"items\": [\n    1,\n    2,\n    3\n  ]\n}\n"));
    assert!(!matches(r#"{"a": "b c"}"#, r#"{"a":"bc"}"#));
    assert!(matches("HTTP/1.1 429 …\nretry-after: 3600", "HTTP/1.1 429 Too Many Requests\r\nretry-after: 3600\r\n"));
    assert!(!matches("a\nb", "a\n"));
    assert!(!matches("\"paid\"", "\"paying\""));
    assert_eq!(unknown_placeholder("-d '<view>x</view>' <the password>"), Some("<the password>"));
}
