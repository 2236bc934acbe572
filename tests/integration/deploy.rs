//! The deploy files of docs/deploy/, checked offline with the pinned checkers that
//! `tests/deploy/install.sh` puts in a venv: the Kubernetes Job against the API
//! schema (kubernetes-validate, strict), the Nomad job parsed as HCL (no offline
//! Nomad schema check exists outside the `nomad` binary); then what each must say.
//! Missing checkers skip these tests loudly on a developer's machine and fail them
//! under CI, like the agent CLIs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const JOB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/deploy/kubernetes-job.yaml");
const NOMAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/deploy/nomad-job.hcl");

fn venv() -> Option<PathBuf> {
    let dir = crate::real_cli::agents_dir().join("deploy-validators");
    let checker = dir.join("bin/kubernetes-validate");
    crate::real_cli::installed(checker, || "the deploy file checkers".to_string(), "tests/deploy/install.sh")?;
    Some(dir)
}

/// Runs a checker with a timeout; returns (success, stdout + stderr).
fn run(program: &Path, args: &[&str]) -> (bool, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{} did not finish within 120 s", program.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// The YAML documents (or the HCL file) as JSON, through the venv's Python.
fn as_json(venv: &Path, script: &str, file: &str) -> Value {
    let (ok, text) = run(&venv.join("bin/python"), &["-c", script, file]);
    assert!(ok, "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn kubernetes_job_validates_against_the_api_schema() {
    let Some(venv) = venv() else { return };
    let (ok, text) = run(&venv.join("bin/kubernetes-validate"), &["--strict", JOB]);
    assert!(ok, "{text}");
    assert!(text.contains("passed for resource job/ralph"), "{text}");
}

#[test]
fn the_validator_catches_a_broken_manifest() {
    let Some(venv) = venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("job.yaml");
    let text = std::fs::read_to_string(JOB).unwrap().replace("activeDeadlineSeconds:", "activeDeadline:");
    std::fs::write(&broken, text).unwrap();
    let (ok, out) = run(&venv.join("bin/kubernetes-validate"), &["--strict", broken.to_str().unwrap()]);
    assert!(!ok, "a misspelt key passed:\n{out}");
}

#[test]
fn kubernetes_job_runs_resume_or_start_and_fails_at_once_on_2_and_3() {
    let Some(venv) = venv() else { return };
    let docs =
        as_json(&venv, "import sys, json, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))", JOB);
    let job = docs.as_array().unwrap().iter().find(|d| d["kind"] == "Job").expect("a Job");
    let claim = docs.as_array().unwrap().iter().find(|d| d["kind"] == "PersistentVolumeClaim").expect("a claim");
    let spec = &job["spec"];
    // 8h, the max_runtime the comment names.
    assert_eq!(spec["activeDeadlineSeconds"], 28800);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let container = &pod["containers"][0];
    let args: Vec<&str> = container["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(args.contains(&"--resume-or-start"), "{args:?}");
    let rules = spec["podFailurePolicy"]["rules"].as_array().unwrap();
    let fail = rules.iter().find(|r| r["action"] == "FailJob").expect("a FailJob rule");
    assert_eq!(fail["onExitCodes"]["operator"], "In");
    assert_eq!(fail["onExitCodes"]["containerName"], container["name"]);
    let codes: Vec<i64> = fail["onExitCodes"]["values"].as_array().unwrap().iter().filter_map(Value::as_i64).collect();
    assert!(codes.contains(&2) && codes.contains(&3), "{codes:?}");
    assert!(!codes.contains(&143) && !codes.contains(&4), "a restartable code fails the Job: {codes:?}");
    assert_eq!(container["envFrom"][0]["secretRef"]["name"], "ralph-credentials");
    let volume = &pod["volumes"][0];
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], claim["metadata"]["name"]);
    assert_eq!(container["volumeMounts"][0]["name"], volume["name"]);
}

#[test]
fn nomad_job_parses_and_runs_resume_or_start() {
    let Some(venv) = venv() else { return };
    // python-hcl2 keeps the quotes of strings; strip them.
    let script = "import sys, json, hcl2\n\
                  def unq(v):\n\
                  \x20   if isinstance(v, dict): return {unq(k): unq(x) for k, x in v.items()}\n\
                  \x20   if isinstance(v, list): return [unq(x) for x in v]\n\
                  \x20   if isinstance(v, str) and len(v) > 1 and v[0] == v[-1] == '\"': return v[1:-1]\n\
                  \x20   return v\n\
                  print(json.dumps(unq(hcl2.load(open(sys.argv[1])))))";
    let parsed = as_json(&venv, script, NOMAD);
    let job = &parsed["job"][0]["ralph"];
    assert_eq!(job["type"], "batch");
    let group = &job["group"][0]["ralph"];
    assert_eq!(group["count"], 1);
    let task = &group["task"][0]["ralph"];
    let args: Vec<&str> = task["config"][0]["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(args.contains(&"--resume-or-start"), "{args:?}");
    assert_eq!(task["kill_signal"], "SIGTERM");
    assert_eq!(task["volume_mount"][0]["volume"], "work");
    assert!(group["volume"][0]["work"].is_object());
}
