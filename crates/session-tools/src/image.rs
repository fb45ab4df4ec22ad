//! Image attachments of tool results fitted to what providers accept (SPEC 1.2 tool-result):
//! an image over the size or side limit is scaled down and re-encoded; one that cannot be
//! brought under the limit (or decoded) is dropped, and the output says how many were.

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use session_core::FilePart;

/// The largest image, in decoded bytes, sent to a model (Anthropic's per-image limit).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// The longest side, in pixels, an image may have as sent.
pub const MAX_IMAGE_SIDE: u32 = 8000;
/// The longest side an over-limit image is scaled down to.
pub const RESIZED_SIDE: u32 = 2048;
/// The most memory decoding one image may take: a small file that claims huge dimensions (a
/// decompression bomb) fails to decode instead of exhausting memory.
const MAX_DECODE_ALLOC: u64 = 256 * 1024 * 1024;
/// JPEG quality used when PNG stays over the byte limit.
const JPEG_QUALITY: u8 = 80;

/// The attachments fitted to the limits, and how many images had to be dropped.
pub fn fit_images(attachments: Vec<FilePart>) -> (Vec<FilePart>, usize) {
    let mut omitted = 0;
    let kept = attachments
        .into_iter()
        .filter_map(|file| match fit_image(file) {
            Fitted::Kept(file) => Some(file),
            Fitted::Omitted => {
                omitted += 1;
                None
            }
        })
        .collect();
    (kept, omitted)
}

/// The suffix a tool output gets when `omitted` images were dropped (SPEC 1.2).
pub fn omitted_suffix(omitted: usize) -> String {
    let noun = if omitted == 1 { "image" } else { "images" };
    format!("\n\n[{omitted} {noun} omitted: could not be resized below the image size limit.]")
}

/// True for an attachment [`fit_images`] looks at: an inline raster image.
pub fn is_inline_image(file: &FilePart) -> bool {
    file.mime.starts_with("image/") && file.mime != "image/svg+xml" && file.url.starts_with("data:")
}

enum Fitted {
    Kept(FilePart),
    Omitted,
}

fn fit_image(file: FilePart) -> Fitted {
    if !is_inline_image(&file) {
        return Fitted::Kept(file);
    }
    let Some(bytes) = data_url_bytes(&file.url) else { return Fitted::Omitted };
    let Ok(reader) = ImageReader::new(Cursor::new(&bytes)).with_guessed_format() else {
        return Fitted::Omitted;
    };
    let Ok((width, height)) = reader.into_dimensions() else { return Fitted::Omitted };
    if bytes.len() <= MAX_IMAGE_BYTES && width.max(height) <= MAX_IMAGE_SIDE {
        return Fitted::Kept(file);
    }
    match shrink(&bytes) {
        Some((mime, encoded)) => {
            let url =
                format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(encoded));
            Fitted::Kept(FilePart { mime: mime.to_owned(), url, ..file })
        }
        None => Fitted::Omitted,
    }
}

/// The image decoded (within [`MAX_DECODE_ALLOC`]), scaled to [`RESIZED_SIDE`] and encoded as
/// PNG, or as JPEG when the PNG is still too large; `None` when neither fits.
fn shrink(bytes: &[u8]) -> Option<(&'static str, Vec<u8>)> {
    let mut reader = ImageReader::new(Cursor::new(bytes)).with_guessed_format().ok()?;
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    let image = reader.decode().ok()?;
    let image = if image.width().max(image.height()) > RESIZED_SIDE {
        image.thumbnail(RESIZED_SIDE, RESIZED_SIDE)
    } else {
        image
    };
    let png = encode(&image, ImageFormat::Png)?;
    if png.len() <= MAX_IMAGE_BYTES {
        return Some(("image/png", png));
    }
    let mut jpeg = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, JPEG_QUALITY);
    DynamicImage::ImageRgb8(image.to_rgb8()).write_with_encoder(encoder).ok()?;
    (jpeg.len() <= MAX_IMAGE_BYTES).then_some(("image/jpeg", jpeg))
}

fn encode(image: &DynamicImage, format: ImageFormat) -> Option<Vec<u8>> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).ok()?;
    Some(out.into_inner())
}

/// The bytes of a base64 `data:` URL.
fn data_url_bytes(url: &str) -> Option<Vec<u8>> {
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    if !header.ends_with(";base64") {
        return None;
    }
    base64::engine::general_purpose::STANDARD.decode(data.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    fn attachment(image: &DynamicImage, format: ImageFormat, mime: &str) -> FilePart {
        let bytes = encode(image, format).unwrap_or_default();
        FilePart {
            mime: mime.to_owned(),
            filename: Some("shot".to_owned()),
            url: format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes)),
            source: None,
        }
    }

    fn side_of(file: &FilePart) -> u32 {
        let bytes = data_url_bytes(&file.url).unwrap_or_default();
        let reader = ImageReader::new(Cursor::new(bytes)).with_guessed_format();
        reader.ok().and_then(|r| r.into_dimensions().ok()).map_or(0, |(w, h)| w.max(h))
    }

    #[test]
    fn a_small_image_is_kept_unchanged() {
        let image = DynamicImage::ImageRgb8(RgbImage::from_pixel(64, 32, Rgb([10, 20, 30])));
        let file = attachment(&image, ImageFormat::Png, "image/png");
        let (kept, omitted) = fit_images(vec![file.clone()]);
        assert_eq!((kept, omitted), (vec![file], 0));
    }

    #[test]
    fn an_image_over_the_side_limit_is_scaled_down() {
        let image = DynamicImage::ImageRgb8(RgbImage::from_pixel(MAX_IMAGE_SIDE + 200, 10, Rgb([1, 2, 3])));
        let (kept, omitted) = fit_images(vec![attachment(&image, ImageFormat::Png, "image/png")]);
        assert_eq!(omitted, 0);
        assert_eq!(side_of(&kept[0]), RESIZED_SIDE);
        assert_eq!(kept[0].filename.as_deref(), Some("shot"), "the name is kept");
    }

    #[test]
    fn an_undecodable_image_is_omitted_and_counted() {
        let broken = FilePart {
            mime: "image/png".to_owned(),
            filename: None,
            url: "data:image/png;base64,bm90IGFuIGltYWdl".to_owned(),
            source: None,
        };
        let pdf = FilePart { mime: "application/pdf".to_owned(), ..broken.clone() };
        let (kept, omitted) = fit_images(vec![broken.clone(), pdf.clone(), broken]);
        assert_eq!((kept, omitted), (vec![pdf], 2), "only images are looked at");
        assert_eq!(
            omitted_suffix(2),
            "\n\n[2 images omitted: could not be resized below the image size limit.]"
        );
        assert_eq!(
            omitted_suffix(1),
            "\n\n[1 image omitted: could not be resized below the image size limit.]"
        );
    }
}
