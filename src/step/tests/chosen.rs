//! What set-up does with the checkpoint it found, decided before anything changes.

use std::path::{Path, PathBuf};

use crate::config::Loaded;
use crate::state::checkpoint::{Checkpoint, Status};
use crate::state::format::{FormatError, Stale};
use crate::step::chosen::{Aside, Chosen, Inputs, NotStarted, choose, unusable};
use crate::step::start::{ResumeFlag, Start, decide};

use super::{TWO_AGENTS, checkpoint};

fn loaded() -> Loaded {
    crate::config::parse(Path::new("ralph.toml"), TWO_AGENTS).unwrap_or_else(|e| panic!("{e}"))
}

fn chose(existing: Option<Checkpoint>, flag: ResumeFlag, corrupt: Option<PathBuf>) -> Result<Chosen, NotStarted> {
    let loaded = loaded();
    let inputs = Inputs {
        loaded: &loaded,
        goal: "g",
        prompt_checksum: "c",
        from: None,
        has_artifact: &|_| false,
        now: jiff::Timestamp::UNIX_EPOCH,
        pid: 7,
    };
    let restore = existing.clone().map(|cp| (Box::new(cp), Stale::Missing));
    let decision = decide(existing.as_ref(), flag);
    choose((decision, flag), existing, restore, (Path::new("/p/checkpoint.json"), corrupt), &inputs)
}

#[test]
fn an_unfinished_run_resumes_with_the_snapshot_to_restore() {
    let cp = Checkpoint { status: Status::Running, ..checkpoint("develop") };
    let Ok(Chosen::Resume { cp, restore, .. }) = chose(Some(cp), ResumeFlag::Resume, None) else { panic!() };
    assert_eq!(cp.status, Status::Running);
    assert!(matches!(restore.map(|(_, stale)| stale), Some(Stale::Missing)));
}

#[test]
fn no_resume_archives_the_old_run_and_ends_its_leftovers() {
    let cp = Checkpoint { status: Status::Running, ..checkpoint("develop") };
    let old = cp.run_id.clone();
    let Ok(Chosen::Fresh { cp, aside, old_run }) = chose(Some(cp), ResumeFlag::Fresh, None) else { panic!() };
    assert!(matches!(aside, Some(Aside::Archive)));
    assert_eq!(old_run, Some(old));
    assert_eq!(cp.run_id, "19700101T000000Z-7");
}

#[test]
fn resume_without_an_unfinished_run_says_why() {
    let Err(NotStarted::NothingToResume(why)) = chose(None, ResumeFlag::Resume, None) else { panic!() };
    assert_eq!(why, "there is no checkpoint at /p/checkpoint.json");
    let done = Checkpoint { status: Status::Completed, ..checkpoint("develop") };
    let Err(NotStarted::NothingToResume(why)) = chose(Some(done), ResumeFlag::Resume, None) else { panic!() };
    assert!(why.ends_with("is completed"), "{why}");
}

#[test]
fn resume_or_start_never_starts_over_a_checkpoint_kept_aside_as_corrupt() {
    let aside = PathBuf::from("/p/checkpoint.json.corrupt-1");
    let refused = chose(None, ResumeFlag::ResumeOrStart, Some(aside.clone()));
    assert!(matches!(refused, Err(NotStarted::OverCorrupt(a)) if a == aside));
    assert!(matches!(chose(None, ResumeFlag::ResumeOrStart, None), Ok(Chosen::Fresh { aside: None, .. })));
    let done = Checkpoint { status: Status::Completed, ..checkpoint("develop") };
    assert!(matches!(chose(Some(done), ResumeFlag::ResumeOrStart, None), Err(NotStarted::Settled(..))));
    assert_eq!(decide(None, ResumeFlag::ResumeOrStart), Start::Fresh);
}

#[test]
fn an_unusable_checkpoint_is_set_aside_by_what_is_wrong_with_it() {
    assert_eq!(unusable(&FormatError::Corrupt("eof".into())).0, "corrupt");
    assert_eq!(unusable(&FormatError::TooNew { version: 99 }).0, "archived");
}
