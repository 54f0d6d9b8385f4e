//! Multipart upload: a blob at or above the threshold (`--s3-multipart-
//! threshold`, 64 MiB by default) goes up as parts of [`PART_SIZE`], as S3
//! clients send large objects (S3 takes at most 5 GB in one PUT, and a
//! failed part costs one part, not the whole object).
//!
//! One timed multipart PUT is its three kinds of request, in order, each
//! once: create, every part, complete. Its upload id and the parts' ETags
//! are allocated inside it: a protocol's own state, a few bytes beside the
//! 64 MiB or more it sends. An upload that fails is aborted, so its parts
//! are not left behind; an abort that fails too is named in the error.

use std::ops::Range;

use rusty_s3::actions::{CreateMultipartUpload, S3Action};

use super::client::{drain, read_text, Call, Client, SIGNED_FOR};
use super::refusal::ErrorDoc;
use super::retry::{is_busy, Again};
use crate::{Error, Result};

/// The size of every part but the last (the AWS CLI's default chunk; S3
/// takes parts of 5 MiB or more).
pub const PART_SIZE: usize = 8 << 20;
/// S3's most parts in one upload: larger objects get larger parts.
const MAX_PARTS: usize = 10_000;
/// The largest object S3 takes in one PUT (5 GiB): a multipart threshold
/// above it would send a larger blob whole, which S3 refuses.
pub const MAX_ONE_PUT: u64 = 5 << 30;

/// Refuses a multipart threshold above [`MAX_ONE_PUT`].
pub fn check_threshold(threshold: u64) -> Result<()> {
    if threshold > MAX_ONE_PUT {
        return Err(Error::invalid(format!(
            "--s3-multipart-threshold {threshold}: S3 takes at most 5 GiB ({MAX_ONE_PUT} bytes) in one PUT, so larger \
             blobs must go up in parts; give at most that"
        )));
    }
    Ok(())
}

/// The byte ranges of the parts of a `len`-byte object.
pub fn parts(len: usize) -> impl Iterator<Item = Range<usize>> {
    let size = PART_SIZE.max(len.div_ceil(MAX_PARTS));
    (0..len.div_ceil(size).max(1)).map(move |i| i * size..len.min((i + 1) * size))
}

/// Whether a blob of `len` bytes goes up in parts under `threshold`.
pub fn in_parts(len: usize, threshold: u64) -> bool {
    len as u64 >= threshold
}

impl Client {
    /// PUTs `body` as `key`, once: one PUT below `threshold`, a multipart
    /// upload at or above it.
    pub fn put_sized(&self, key: &str, body: &[u8], threshold: u64) -> Result<()> {
        if in_parts(body.len(), threshold) {
            self.put_multipart(key, body, false).map(drop)
        } else {
            self.put(key, body)
        }
    }

    /// [`Client::put_sized`] for building a dataset, never timed: each
    /// request tried again while the store answers busy. How many answers
    /// were busy.
    pub fn put_sized_patiently(&self, key: &str, body: &[u8], threshold: u64) -> Result<u64> {
        if in_parts(body.len(), threshold) {
            self.put_multipart(key, body, true)
        } else {
            self.put_patiently(key, body)
        }
    }

    /// Create, parts, complete; aborted when any fails. How many answers
    /// were busy or broke off (`patient`, building: each request tried
    /// again after a pause; timed: each sent once, any failure an error).
    fn put_multipart(&self, key: &str, body: &[u8], patient: bool) -> Result<u64> {
        self.store.check_key("POST (create multipart upload)", key)?;
        let mut upload = String::new();
        let mut busy = self.tries(patient, || self.create_once(key, &mut upload))?;
        let mut etags = Vec::new();
        let mut sent = || -> Result<()> {
            for (i, range) in parts(body.len()).enumerate() {
                let number = u16::try_from(i + 1).map_err(|_| Error::invalid("too many parts"))?;
                let mut etag = None;
                busy += self.tries(patient, || self.put_part(key, &upload, number, &body[range.clone()], &mut etag))?;
                etags.push(etag.unwrap_or_default());
            }
            let mut broke = false;
            busy += self.tries(patient, || self.complete_once(key, &upload, &etags, body.len(), &mut broke))?;
            Ok(())
        };
        match sent() {
            Ok(()) => Ok(busy),
            Err(e) => Err(match self.tries(patient, || self.abort_once(key, &upload)) {
                Ok(_) => e,
                Err(abort) => Error::invalid(format!("{e}; aborting its multipart upload failed too: {abort}")),
            }),
        }
    }

    /// One request of an upload: tried again while `patient`, else once.
    fn tries(&self, patient: bool, mut once: impl FnMut() -> Result<Option<Again>>) -> Result<u64> {
        if patient {
            self.patiently(once)
        } else {
            Again::none(once()?).map(|()| 0)
        }
    }

    /// One create; the upload's id in `upload` once made.
    fn create_once(&self, key: &str, upload: &mut String) -> Result<Option<Again>> {
        let call = Call { op: "POST (create multipart upload)", key };
        let url = self.store.bucket.create_multipart_upload(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        let mut resp = match self.agent.post(url.as_str()).send_empty() {
            Ok(resp) => resp,
            Err(e) => return self.failed_to_send(call, e),
        };
        if is_busy(resp.status().as_u16()) {
            return self.answer(call, &mut resp);
        }
        self.check(call, &mut resp)?;
        let text = read_text(&mut resp);
        let created = CreateMultipartUpload::parse_response(&text)
            .map_err(|e| self.failed(call, &format!("the store's answer could not be read: {e}")))?;
        *upload = created.upload_id().to_string();
        Ok(None)
    }

    /// One part: Ok(None) when stored (its ETag in `etag`), Ok(Some(again))
    /// when the store answered busy or the connection broke.
    fn put_part(
        &self,
        key: &str,
        upload: &str,
        number: u16,
        body: &[u8],
        etag: &mut Option<String>,
    ) -> Result<Option<Again>> {
        let call = Call { op: "PUT (part)", key };
        let url = self.store.bucket.upload_part(Some(&self.store.credentials), key, number, upload).sign(SIGNED_FOR);
        let mut resp = match self.agent.put(url.as_str()).send(body) {
            Ok(resp) => resp,
            Err(e) => return self.failed_to_send(call, e),
        };
        *etag = resp.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_string);
        let answer = self.answer(call, &mut resp)?;
        if answer.is_none() && etag.is_none() {
            return Err(self.failed(call, "the store gave the part no ETag"));
        }
        Ok(answer)
    }

    /// One complete of an upload of `len` bytes. A try after one whose
    /// connection broke (`broke`) may find the upload already completed
    /// (404 NoSuchUpload): done, when the object has its length.
    fn complete_once(
        &self,
        key: &str,
        upload: &str,
        etags: &[String],
        len: usize,
        broke: &mut bool,
    ) -> Result<Option<Again>> {
        let call = Call { op: "POST (complete multipart upload)", key };
        let action = self.store.bucket.complete_multipart_upload(
            Some(&self.store.credentials),
            key,
            upload,
            etags.iter().map(String::as_str),
        );
        let url = action.sign(SIGNED_FOR);
        let mut resp = match self.agent.post(url.as_str()).send(action.body().as_bytes()) {
            Ok(resp) => resp,
            Err(e) => {
                let again = self.failed_to_send(call, e);
                *broke |= matches!(again, Ok(Some(Again::Broken(_))));
                return again;
            }
        };
        let status = resp.status().as_u16();
        if status == 404 && *broke && self.head(key)? == Some(len as u64) {
            drain(&mut resp);
            return Ok(None);
        }
        if is_busy(status) {
            return self.answer(call, &mut resp);
        }
        self.check(call, &mut resp)?;
        // S3 may answer 200 and put the error in the body; an internal
        // error or a busy store there is worth another try.
        let text = read_text(&mut resp);
        if !text.contains("<Error>") {
            return Ok(None);
        }
        let e = self.failed(call, &format!("the store answered {}", text.trim()));
        match ErrorDoc::parse(&text).code.as_deref() {
            Some("InternalError" | "SlowDown" | "ServiceUnavailable") => Ok(Some(Again::Busy(e))),
            _ => Err(e),
        }
    }

    /// One abort of an upload (one already gone counts as aborted).
    pub(super) fn abort_once(&self, key: &str, upload: &str) -> Result<Option<Again>> {
        let call = Call { op: "DELETE (abort multipart upload)", key };
        self.store.check_key(call.op, key)?;
        let url = self.store.bucket.abort_multipart_upload(Some(&self.store.credentials), key, upload).sign(SIGNED_FOR);
        match self.agent.delete(url.as_str()).call() {
            Ok(resp) if resp.status().as_u16() == 404 => Ok(None),
            Ok(mut resp) => self.answer(call, &mut resp),
            Err(e) => self.failed_to_send(call, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::engine::s3::fake::{Fake, Reply};

    /// A store that fails each kind of multipart request once, as a busy
    /// or restarting one does: create 503 SlowDown, the part's connection
    /// reset, complete 500; then takes it.
    fn failing_once() -> (Fake, Arc<[AtomicUsize; 3]>) {
        let tries = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)]);
        let seen = tries.clone();
        let ns = r#"xmlns="http://s3.amazonaws.com/doc/2006-03-01/""#;
        let fake = Fake::start(move |r| {
            let first = |i: usize| seen[i].fetch_add(1, Ordering::SeqCst) == 0;
            match r.method.as_str() {
                "POST" if r.has("uploads") && first(0) => Reply::error(503, "SlowDown"),
                "POST" if r.has("uploads") => Reply::ok(format!(
                    "<InitiateMultipartUploadResult {ns}><Bucket>b</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>"
                )),
                "PUT" if first(1) => Reply::Reset,
                "PUT" => Reply::Answer(200, vec![("ETag", "\"e1\"".into())], String::new()),
                "POST" if first(2) => Reply::error(500, "InternalError"),
                "POST" => {
                    assert!(String::from_utf8_lossy(&r.body).contains("e1"), "the part's ETag is sent");
                    Reply::ok(format!("<CompleteMultipartUploadResult {ns}><Key>k</Key></CompleteMultipartUploadResult>"))
                }
                _ => Reply::Answer(204, Vec::new(), String::new()),
            }
        });
        (fake, tries)
    }

    /// Issue 43, item 4: while building, a busy create, a reset part and a
    /// failed complete are each tried again, as a single PUT is; a timed
    /// multipart PUT tries each once and aborts the upload.
    #[test]
    fn a_multipart_upload_is_tried_again_while_building_and_never_when_timed() {
        let (fake, tries) = failing_once();
        assert_eq!(
            fake.client().put_sized_patiently("blobbench/k", b"0123456789", 1).unwrap(),
            3,
            "three failed tries"
        );
        assert_eq!(tries.iter().map(|t| t.load(Ordering::SeqCst)).collect::<Vec<_>>(), [2, 2, 2]);
        let (timed, _) = failing_once();
        let e = timed.client().put_sized("blobbench/k", b"0123456789", 1).unwrap_err().to_string();
        assert!(e.contains("503") && e.contains("timed requests are never tried again"), "{e}");
        assert_eq!(timed.lines(), ["POST blobbench/k"], "the create alone, once");
        let (timed, tries) = failing_once();
        tries[0].store(1, Ordering::SeqCst);
        assert!(timed.client().put_sized("blobbench/k", b"0123456789", 1).is_err(), "a reset part ends a timed PUT");
        assert_eq!(
            timed.lines(),
            ["POST blobbench/k", "PUT blobbench/k", "DELETE blobbench/k"],
            "created, the part once, aborted"
        );
    }

    #[test]
    fn parts_cover_the_object_once_in_order() {
        for len in [0, 1, PART_SIZE - 1, PART_SIZE, PART_SIZE + 1, 40_000_000, 3 * PART_SIZE] {
            let ranges: Vec<_> = parts(len).collect();
            assert_eq!(ranges.first().map(|r| r.start), Some(0), "{len}");
            assert_eq!(ranges.last().map(|r| r.end), Some(len), "{len}");
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start && w[0].len() == PART_SIZE), "{len}");
        }
        assert_eq!(parts(40_000_000).count(), 5);
        let huge = 100_000 * PART_SIZE;
        assert!(parts(huge).count() <= MAX_PARTS, "larger parts for an object over 80 GB");
        assert!(in_parts(64 << 20, 64 << 20) && !in_parts((64 << 20) - 1, 64 << 20));
        assert!(check_threshold(MAX_ONE_PUT).is_ok());
        let e = check_threshold(MAX_ONE_PUT + 1).unwrap_err().to_string();
        assert!(e.contains("at most 5 GiB") && e.starts_with("--s3-multipart-threshold 5368709121:"), "{e}");
    }
}
