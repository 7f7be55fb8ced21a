//! Documents as a desktop writes them, with the least each format needs to
//! open: zip archives, Word, Excel, PowerPoint and OpenDocument files, SVG
//! pictures of text, RTF, calendar invitations, vCards, gzip. Paragraphs
//! in, bytes out; text is escaped for the format.

use std::io::{Cursor, Write};

/// A zip archive of `entries` (name, content), deflated.
pub fn zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default());
    for (name, content) in entries {
        w.start_file(*name, options).expect("zip entry");
        w.write_all(content).expect("zip write");
    }
    w.finish().expect("zip finish").into_inner()
}

/// A zip archive of `entries`, each encrypted with `password`: ZipCrypto
/// (what most archivers write by default), or AES-256 when `aes`.
pub fn encrypted_zip(entries: &[(&str, &[u8])], password: &str, aes: bool) -> Vec<u8> {
    use zip::unstable::write::FileOptionsExt;
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, content) in entries {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .last_modified_time(zip::DateTime::default());
        let options = if aes {
            options.with_aes_encryption(zip::AesMode::Aes256, password)
        } else {
            options
                .with_deprecated_encryption(password.as_bytes())
                .expect("a password")
        };
        w.start_file(*name, options).expect("zip entry");
        w.write_all(content).expect("zip write");
    }
    w.finish().expect("zip finish").into_inner()
}

/// `s` escaped for XML text and attribute values.
pub fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="MAIN"/></Relationships>"#;

fn content_types(main: &str, ctype: &str, extra: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/{main}" ContentType="{ctype}"/>{extra}</Types>"#
    )
}

/// A Word document (.docx): one `w:p` a paragraph, its lines joined by
/// `w:br`, each line split in two runs as Word splits them.
pub fn docx(paragraphs: &[Vec<String>]) -> Vec<u8> {
    let mut body = String::new();
    for lines in paragraphs {
        body.push_str("<w:p><w:pPr><w:spacing w:after=\"160\"/></w:pPr>");
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                body.push_str("<w:r><w:br/></w:r>");
            }
            let cut = line
                .char_indices()
                .nth(line.chars().count() / 2)
                .map_or(0, |(b, _)| b);
            let (a, b) = line.split_at(cut);
            for run in [a, b] {
                body.push_str(&format!(
                    "<w:r><w:rPr><w:rFonts w:ascii=\"Calibri\"/></w:rPr><w:t xml:space=\"preserve\">{}</w:t></w:r>",
                    xml_escape(run)
                ));
            }
        }
        body.push_str("</w:p>");
    }
    let doc = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}<w:sectPr/></w:body></w:document>"#
    );
    zip(&[
        (
            "[Content_Types].xml",
            content_types(
                "word/document.xml",
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
                "",
            )
            .as_bytes(),
        ),
        (
            "_rels/.rels",
            RELS.replace("MAIN", "word/document.xml").as_bytes(),
        ),
        ("word/document.xml", doc.as_bytes()),
        (
            "word/styles.xml",
            b"<w:styles xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"/>",
        ),
    ])
}

/// An Excel workbook (.xlsx): one cell a line, in column A, the strings
/// in the shared-string table.
pub fn xlsx(paragraphs: &[Vec<String>]) -> Vec<u8> {
    let lines: Vec<&String> = paragraphs.iter().flatten().collect();
    let mut strings = String::new();
    let mut rows = String::new();
    for (i, line) in lines.iter().enumerate() {
        strings.push_str(&format!("<si><t>{}</t></si>", xml_escape(line)));
        rows.push_str(&format!(
            "<row r=\"{n}\"><c r=\"A{n}\" t=\"s\"><v>{i}</v></c></row>",
            n = i + 1
        ));
    }
    let sst = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="{n}" uniqueCount="{n}">{strings}</sst>"#,
        n = lines.len()
    );
    let sheet = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>{rows}</sheetData></worksheet>"#
    );
    zip(&[
        (
            "[Content_Types].xml",
            content_types(
                "xl/workbook.xml",
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
                "",
            )
            .as_bytes(),
        ),
        ("_rels/.rels", RELS.replace("MAIN", "xl/workbook.xml").as_bytes()),
        ("xl/workbook.xml", b"<workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\"><sheets><sheet name=\"Sheet1\" sheetId=\"1\"/></sheets></workbook>"),
        ("xl/worksheets/sheet1.xml", sheet.as_bytes()),
        ("xl/sharedStrings.xml", sst.as_bytes()),
    ])
}

/// A PowerPoint deck (.pptx): one slide a paragraph, one `a:p` a line.
pub fn pptx(paragraphs: &[Vec<String>]) -> Vec<u8> {
    let slides: Vec<String> = paragraphs
        .iter()
        .map(|lines| {
            let ps: String = lines
                .iter()
                .map(|l| format!("<a:p><a:r><a:rPr lang=\"en-US\"/><a:t>{}</a:t></a:r></a:p>", xml_escape(l)))
                .collect();
            format!(
                r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody><a:bodyPr/>{ps}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>"#
            )
        })
        .collect();
    let names: Vec<String> = (1..=slides.len())
        .map(|i| format!("ppt/slides/slide{i}.xml"))
        .collect();
    let ct = content_types(
        "ppt/presentation.xml",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
        "",
    );
    let rels = RELS.replace("MAIN", "ppt/presentation.xml");
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("[Content_Types].xml", ct.as_bytes()),
        ("_rels/.rels", rels.as_bytes()),
        ("ppt/presentation.xml", b"<p:presentation xmlns:p=\"http://schemas.openxmlformats.org/presentationml/2006/main\"/>"),
    ];
    for (name, slide) in names.iter().zip(&slides) {
        entries.push((name, slide.as_bytes()));
    }
    zip(&entries)
}

/// An OpenDocument text (.odt): one `text:p` a paragraph, its lines
/// joined by `text:line-break`.
pub fn odt(paragraphs: &[Vec<String>]) -> Vec<u8> {
    let body: String = paragraphs
        .iter()
        .map(|lines| {
            let inner: Vec<String> = lines.iter().map(|l| xml_escape(l)).collect();
            format!(
                "<text:p text:style-name=\"P1\">{}</text:p>",
                inner.join("<text:line-break/>")
            )
        })
        .collect();
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3"><office:body><office:text>{body}</office:text></office:body></office:document-content>"#
    );
    zip(&[
        ("mimetype", b"application/vnd.oasis.opendocument.text"),
        ("content.xml", content.as_bytes()),
        ("styles.xml", b"<office:document-styles xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\"/>"),
        ("META-INF/manifest.xml", b"<manifest:manifest xmlns:manifest=\"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0\"/>"),
    ])
}

/// An SVG picture of text: one `<text>` a line, 18 px apart, paragraphs a
/// line apart.
pub fn svg(paragraphs: &[Vec<String>]) -> Vec<u8> {
    let mut y = 30;
    let mut texts = String::new();
    for lines in paragraphs {
        for line in lines {
            texts.push_str(&format!(
                "<text x=\"20\" y=\"{y}\" font-family=\"Arial\" font-size=\"14\">{}</text>\n",
                xml_escape(line)
            ));
            y += 18;
        }
        y += 18;
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"{y}\" viewBox=\"0 0 640 {y}\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{texts}</svg>\n"
    )
    .into_bytes()
}

/// An RTF document: one `\par` a line, a blank one between paragraphs,
/// non-ASCII letters as `\uN?`.
pub fn rtf(paragraphs: &[Vec<String>]) -> Vec<u8> {
    let mut out = String::from(
        "{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fswiss Calibri;}}{\\colortbl ;\\red0\\green0\\blue0;}\n{\\*\\generator Riched20 10.0.19041}\\viewkind4\\uc1\\pard\\sa200\\sl276\\slmult1\\f0\\fs22\\lang9 ",
    );
    for (p, lines) in paragraphs.iter().enumerate() {
        if p > 0 {
            out.push_str("\\par\n");
        }
        for line in lines {
            for c in line.chars() {
                match c {
                    '\\' | '{' | '}' => {
                        out.push('\\');
                        out.push(c);
                    }
                    c if c.is_ascii() => out.push(c),
                    c => {
                        let mut units = [0u16; 2];
                        for u in c.encode_utf16(&mut units) {
                            out.push_str(&format!("\\u{}?", *u as i16));
                        }
                    }
                }
            }
            out.push_str("\\par\n");
        }
    }
    out.push_str("}\n");
    out.into_bytes()
}

/// A line of an iCalendar or vCard file, escaped and folded at 75 bytes.
fn content_line(name: &str, value: &str) -> String {
    let escaped = value
        .replace('\\', "\\\\")
        .replace(';', "\\;")
        .replace(',', "\\,")
        .replace('\n', "\\n");
    let line = format!("{name}:{escaped}");
    let mut out = String::new();
    let mut width = 0;
    for c in line.chars() {
        if width + c.len_utf8() > 74 {
            out.push_str("\r\n ");
            width = 1;
        }
        out.push(c);
        width += c.len_utf8();
    }
    out.push_str("\r\n");
    out
}

/// A calendar invitation (.ics, METHOD:REQUEST) with `summary` and
/// `description`, from `organizer`, numbered `uid`.
pub fn ics(summary: &str, description: &str, organizer: &str, uid: &str) -> Vec<u8> {
    let mut out = String::from(
        "BEGIN:VCALENDAR\r\nPRODID:-//Microsoft Corporation//Outlook 16.0 MIMEDIR//EN\r\nVERSION:2.0\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\n",
    );
    out.push_str(&format!("ORGANIZER;CN=\"Team\":mailto:{organizer}\r\n"));
    out.push_str(&content_line("UID", uid));
    out.push_str(
        "DTSTAMP:20261128T090000Z\r\nDTSTART:20261201T150000Z\r\nDTEND:20261201T153000Z\r\n",
    );
    out.push_str(&content_line("SUMMARY;LANGUAGE=en-US", summary));
    out.push_str(&content_line("DESCRIPTION;LANGUAGE=en-US", description));
    out.push_str("STATUS:CONFIRMED\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n");
    out.into_bytes()
}

/// A contact card (.vcf) named `name`, with `note`.
pub fn vcard(name: &str, note: &str) -> Vec<u8> {
    let mut out = String::from("BEGIN:VCARD\r\nVERSION:3.0\r\n");
    out.push_str(&content_line("FN", name));
    out.push_str(&content_line("NOTE", note));
    out.push_str("END:VCARD\r\n");
    out.into_bytes()
}

/// `data` gzip-compressed.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).expect("gzip write");
    gz.finish().expect("gzip finish")
}
