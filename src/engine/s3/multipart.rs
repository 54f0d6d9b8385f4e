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

use super::client::{patiently, read_text, Again, Call, Client, BUSY_PAUSES, SIGNED_FOR};
use crate::{Error, Result};

/// The size of every part but the last (the AWS CLI's default chunk; S3
/// takes parts of 5 MiB or more).
pub const PART_SIZE: usize = 8 << 20;
/// S3's most parts in one upload: larger objects get larger parts.
const MAX_PARTS: usize = 10_000;

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
    /// were busy (`patient`: tried again after a pause; else an error).
    fn put_multipart(&self, key: &str, body: &[u8], patient: bool) -> Result<u64> {
        let upload = self.create_upload(key)?;
        let mut busy = 0;
        let mut etags = Vec::new();
        let mut sent = || -> Result<()> {
            for (i, range) in parts(body.len()).enumerate() {
                let number = u16::try_from(i + 1).map_err(|_| Error::invalid("too many parts"))?;
                let mut etag = None;
                let mut once = || self.put_part(key, &upload, number, &body[range.clone()], &mut etag);
                busy += if patient { patiently(&BUSY_PAUSES, once)? } else { Again::none(once()?).map(|()| 0)? };
                etags.push(etag.unwrap_or_default());
            }
            self.complete_upload(key, &upload, &etags)
        };
        match sent() {
            Ok(()) => Ok(busy),
            Err(e) => Err(match self.abort_upload(key, &upload) {
                Ok(()) => e,
                Err(abort) => Error::invalid(format!("{e}; aborting its multipart upload failed too: {abort}")),
            }),
        }
    }

    fn create_upload(&self, key: &str) -> Result<String> {
        let call = Call { op: "POST (create multipart upload)", key };
        let url = self.store.bucket.create_multipart_upload(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        let mut resp = self.agent.post(url.as_str()).send_empty().map_err(|e| self.transport(call, e, None))?;
        self.check(call, &mut resp)?;
        let text = read_text(&mut resp);
        let created = CreateMultipartUpload::parse_response(&text)
            .map_err(|e| self.failed(call, &format!("the store's answer could not be read: {e}")))?;
        Ok(created.upload_id().to_string())
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
        let mut resp = self.agent.put(url.as_str()).send(body).map_err(|e| self.transport(call, e, None))?;
        *etag = resp.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_string);
        let answer = self.answer(call, &mut resp)?;
        if answer.is_none() && etag.is_none() {
            return Err(self.failed(call, "the store gave the part no ETag"));
        }
        Ok(answer)
    }

    fn complete_upload(&self, key: &str, upload: &str, etags: &[String]) -> Result<()> {
        let call = Call { op: "POST (complete multipart upload)", key };
        let action = self.store.bucket.complete_multipart_upload(
            Some(&self.store.credentials),
            key,
            upload,
            etags.iter().map(String::as_str),
        );
        let url = action.sign(SIGNED_FOR);
        let body = action.body();
        let mut resp =
            self.agent.post(url.as_str()).send(body.as_bytes()).map_err(|e| self.transport(call, e, None))?;
        self.check(call, &mut resp)?;
        // S3 may answer 200 and put the error in the body.
        let text = read_text(&mut resp);
        if text.contains("<Error>") {
            return Err(self.failed(call, &format!("the store answered {}", text.trim())));
        }
        Ok(())
    }

    fn abort_upload(&self, key: &str, upload: &str) -> Result<()> {
        let call = Call { op: "DELETE (abort multipart upload)", key };
        let url = self.store.bucket.abort_multipart_upload(Some(&self.store.credentials), key, upload).sign(SIGNED_FOR);
        let mut resp = self.agent.delete(url.as_str()).call().map_err(|e| self.transport(call, e, None))?;
        Again::none(self.answer(call, &mut resp)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
