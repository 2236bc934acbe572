//! The prompts a run's attempts were given, redacted, in one file per run
//! (`logs/<run>/prompts.md`), so that an agent call creates no file: each entry is
//! a line `==> <stem>: <length> bytes <==`, the text, and a newline. The length, not
//! a separator, ends an entry, so a prompt that quotes the header line is read back
//! exactly. Nothing is synced (a prompt is for a person; recovery never reads it).
//! An entry a crash tore can only be the last: readers leave it out, and the next
//! ralph of the run cuts it before it appends (its entries would follow it).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The file, in the run's log directory.
const FILE: &str = "prompts.md";

/// The run's prompt file, opened at its first entry.
#[derive(Debug)]
pub(crate) struct PromptLog {
    path: PathBuf,
    file: Option<File>,
}

impl PromptLog {
    /// The prompt file of the run whose log directory is `dir`.
    pub(crate) fn new(dir: &Path) -> Self {
        Self { path: dir.join(FILE), file: None }
    }

    /// Appends the prompt of the attempt `stem`, whole or not at all.
    pub(crate) fn append(&mut self, stem: &str, text: &str) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(open(&self.path)?),
        };
        let mut entry = format!("==> {stem}: {} bytes <==\n", text.len()).into_bytes();
        entry.extend_from_slice(text.as_bytes());
        entry.push(b'\n');
        let start = file.seek(io::SeekFrom::End(0))?;
        // A part written (a full disk) is taken back: the next entry must follow a whole one.
        file.write_all(&entry).inspect_err(|_| drop(file.set_len(start)))
    }
}

/// Opens the file for appending, cutting the entry a crash tore.
fn open(path: &Path) -> io::Result<File> {
    let file = crate::state::private::append_file(path)?;
    let whole = entries(BufReader::new(&file))?.last().map_or(0, |(_, text)| text.end + 1);
    if whole < file.metadata()?.len() {
        file.set_len(whole)?;
    }
    Ok(file)
}

/// The whole entries of a prompt file, in order: each attempt's stem and where its
/// text is (a newline follows it). A torn last entry is left out, never an error.
pub(crate) fn entries(mut reader: impl BufRead + Seek) -> io::Result<Vec<(String, Range<u64>)>> {
    let (mut found, mut end, mut line) = (Vec::new(), 0, Vec::new());
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)? as u64;
        let header = std::str::from_utf8(&line).ok().and_then(|l| l.strip_prefix("==> ")?.strip_suffix(" bytes <==\n"));
        let Some((stem, len)) = header.and_then(|h| h.rsplit_once(": ")) else { break };
        let Ok(len) = len.parse::<u64>() else { break };
        reader.seek_relative(i64::try_from(len).unwrap_or(i64::MAX))?;
        let mut newline = [0];
        if reader.read(&mut newline)? != 1 || newline != [b'\n'] {
            break;
        }
        found.push((stem.to_string(), end + n..end + n + len));
        end += n + len + 1;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> Vec<(String, String)> {
        let bytes = std::fs::read(path).unwrap();
        let found = entries(io::Cursor::new(&bytes)).unwrap();
        let text = |at: &Range<u64>| String::from_utf8(bytes[at.start as usize..at.end as usize].to_vec()).unwrap();
        found.iter().map(|(stem, at)| (stem.clone(), text(at))).collect()
    }

    fn pair(stem: &str, text: &str) -> (String, String) {
        (stem.to_string(), text.to_string())
    }

    #[test]
    fn prompts_read_back_exactly_even_when_one_quotes_the_header() {
        let d = tempfile::tempdir().unwrap();
        let mut log = PromptLog::new(d.path());
        let quoting = "# Goal\n==> attempt-0009-x-y: 3 bytes <==\nabc\n\n";
        log.append("attempt-0001-develop-a", "first prompt").unwrap();
        log.append("attempt-0002-develop-a", quoting).unwrap();
        log.append("attempt-0003-develop-a", "").unwrap();
        let expected = [
            pair("attempt-0001-develop-a", "first prompt"),
            pair("attempt-0002-develop-a", quoting),
            pair("attempt-0003-develop-a", ""),
        ];
        assert_eq!(read(&d.path().join(FILE)), expected);
    }

    #[test]
    fn a_torn_last_entry_is_left_out_and_cut_before_the_next_ralph_appends() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join(FILE);
        PromptLog::new(d.path()).append("attempt-0001-develop-a", "whole").unwrap();
        let whole = std::fs::metadata(&path).unwrap().len();
        for torn in
            ["==> attempt-0002-develop-a: 100 bytes <==\nonly part of it", "==> attempt-00", "==> a: 1 bytes <==\nxy"]
        {
            let mut file = crate::state::private::append_file(&path).unwrap();
            file.write_all(torn.as_bytes()).unwrap();
            assert_eq!(read(&path), [pair("attempt-0001-develop-a", "whole")], "{torn:?}");
            // The next ralph of the run.
            PromptLog::new(d.path()).append("attempt-0002-develop-a", "again").unwrap();
            assert_eq!(read(&path), [pair("attempt-0001-develop-a", "whole"), pair("attempt-0002-develop-a", "again")]);
            file.set_len(whole).unwrap();
        }
    }
}
