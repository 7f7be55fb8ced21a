//! Independent cases for encrypted archives (issue 65, "budgets that
//! follow what a person sees": "an encrypted archive is tried with the
//! passwords the message itself states"), written from the class's
//! description alone, without the authors' tests or the reader's code.
//!
//! Attack cases (campaigns that must turn bulk, all copies one campaign,
//! and the archive's text read into each copy's normalized text):
//!
//! 1. ZipCrypto, an HTML page inside, the password stated in English in
//!    varied shapes (colon, "is", in parentheses, "use PIN ... to open");
//! 2. AES-256, an HTML page inside, the statement in German, French,
//!    Spanish, Portuguese, Dutch, Italian and Polish;
//! 3. AES-256, a Word document inside, the password stated only in the
//!    subject line;
//! 4. ZipCrypto, a nested zip (an HTML page) inside, the statement in an
//!    HTML body, the password in quotes and with punctuation ("Q7#k-22");
//! 5. ZipCrypto, a Word-like zip (`word/document.xml`) inside, the body
//!    stating decoys ("code", "PIN") before the real "Password:"
//!    statement;
//! 6. AES-256, a plain text file inside ("the archive password is ...").
//!
//! Ordinary cases (must stay clean and apart):
//!
//! 1. two people each sending one colleague an encrypted payroll archive
//!    (different content, different passwords);
//! 2. a newsletter that mentions "password reset", an IT notice about
//!    passwords and a Wi-Fi password shared, none with an archive;
//! 3. five senders each sending their own document in an archive with the
//!    same password "1234", the same body line and the same file name;
//! 4. encrypted archives without a stated password, or with a stated one
//!    that does not open them: skipped (their text not read);
//! 5. one person sending the same encrypted document to two colleagues.
//!
//! Each case replays raw RFC 5322 messages (CRLF) through the public
//! replay API, one recipient a copy.
//!
//! Of the 11, 10 passed as first written. Attack 6 failed: a `.txt` file
//! inside a zip was not read, encrypted or not (an archive's entry was
//! read only when it was a document format), so copies whose text is only
//! in an encrypted text file stayed apart and clean. Mended: an archive's
//! entry that is plain text is read, one that is a picture is read as an
//! attached picture (`mime::add_inner`).

mod common;

use bulkwatch::engine::verdict::Level;
use common::{config, replay, Fed, Msg};
use testkit::documents::{docx, encrypted_zip, zip};

// ---------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------

/// The body part of a message.
enum Body {
    Plain(String),
    Html(String),
}

/// One message as a sender writes it.
struct Mail {
    from: String,
    to: String,
    subject: String,
    body: Body,
    /// An attachment: file name and bytes.
    attachment: Option<(String, Vec<u8>)>,
}

impl Mail {
    /// The raw message (CRLF line ends), `n` making its Message-ID.
    fn raw(&self, n: usize) -> Vec<u8> {
        let boundary = format!("=_part_{n}_boundary");
        let sender = self
            .from
            .rsplit('<')
            .next()
            .unwrap_or(&self.from)
            .trim_end_matches('>')
            .to_owned();
        let domain = sender
            .rsplit('@')
            .next()
            .unwrap_or("example.org")
            .to_owned();
        let mut s = String::new();
        s.push_str(&format!("Return-Path: <{sender}>\r\n"));
        s.push_str(&format!("From: {}\r\n", self.from));
        s.push_str(&format!("To: {}\r\n", self.to));
        s.push_str(&format!("Subject: {}\r\n", self.subject));
        s.push_str(&format!(
            "Date: Tue, 12 Mar 2024 10:{:02}:{:02} +0100\r\n",
            n / 60 % 60,
            n % 60
        ));
        s.push_str(&format!("Message-ID: <arch.{n}.{}@{domain}>\r\n", n * 7919));
        s.push_str("MIME-Version: 1.0\r\n");
        let (ctype, text) = match &self.body {
            Body::Plain(t) => ("text/plain", t),
            Body::Html(t) => ("text/html", t),
        };
        let text = text.replace("\r\n", "\n").replace('\n', "\r\n");
        match &self.attachment {
            None => {
                s.push_str(&format!("Content-Type: {ctype}; charset=utf-8\r\n"));
                s.push_str("Content-Transfer-Encoding: 8bit\r\n\r\n");
                s.push_str(&text);
                s.push_str("\r\n");
            }
            Some((name, bytes)) => {
                s.push_str(&format!(
                    "Content-Type: multipart/mixed; boundary=\"{boundary}\"\r\n\r\n"
                ));
                s.push_str("This is a multi-part message in MIME format.\r\n");
                s.push_str(&format!("--{boundary}\r\n"));
                s.push_str(&format!("Content-Type: {ctype}; charset=utf-8\r\n"));
                s.push_str("Content-Transfer-Encoding: 8bit\r\n\r\n");
                s.push_str(&text);
                s.push_str("\r\n");
                s.push_str(&format!("--{boundary}\r\n"));
                s.push_str(&format!(
                    "Content-Type: application/zip; name=\"{name}\"\r\n"
                ));
                s.push_str(&format!(
                    "Content-Disposition: attachment; filename=\"{name}\"\r\n"
                ));
                s.push_str("Content-Transfer-Encoding: base64\r\n\r\n");
                s.push_str(&testkit::base64_lines(bytes).replace('\n', "\r\n"));
                s.push_str(&format!("--{boundary}--\r\n"));
            }
        }
        s.into_bytes()
    }
}

fn msg(group: &'static str, n: usize, m: &Mail) -> Msg {
    Msg {
        group,
        raw: m.raw(n),
    }
}

/// The normalized text the reader makes of `raw` (default config).
fn text_of(raw: &[u8]) -> String {
    let cfg = bulkwatch::config::Config::default();
    let rc = bulkwatch::engine::read_config(&cfg);
    let reading = bulkwatch::engine::read(raw, &[], &rc);
    assert!(reading.parsed, "message not parsed");
    reading.normalized.text
}

/// What was read of each message and how it was judged, for a failure.
fn explain(name: &str, fed: &[Fed]) -> String {
    let cfg = config();
    let rc = bulkwatch::engine::read_config(&cfg);
    let mut s = format!("case {name}:\n");
    for (i, f) in fed.iter().enumerate() {
        let reading = bulkwatch::engine::read(&f.raw, &[], &rc);
        let text: String = reading.normalized.text.chars().take(200).collect();
        s.push_str(&format!(
            "  #{:<2} {:<8} campaign={:?} level={:?} score={} exact={} dist={:?} feat={} \
             nearest={:?} near_campaign={:?}/{:?}\n      attachments={} partial={} text={:?}\n",
            i + 1,
            f.group,
            f.rec.campaign.map(|c| c.0),
            f.rec.level,
            f.rec.score,
            f.rec.exact,
            f.rec.distance,
            f.rec.features,
            f.rec.nearest,
            f.rec.near_campaign.map(|c| c.0),
            f.rec.near_distance,
            reading.attachments.len(),
            reading.partial,
            text.replace('\n', " / "),
        ));
    }
    s
}

/// An attack: every copy of `group` in one campaign, its last two copies
/// bulk; no copy of another group in that campaign.
fn expect_campaign(name: &str, fed: &[Fed], group: &str) {
    let members: Vec<&Fed> = fed.iter().filter(|f| f.group == group).collect();
    assert!(members.len() >= 7, "case {name}: too few copies");
    let first = members[0].rec.campaign;
    let mut problems = Vec::new();
    if first.is_none() {
        problems.push(format!("{group}: first copy has no campaign"));
    }
    for (i, f) in members.iter().enumerate() {
        if f.rec.campaign != first {
            problems.push(format!("{group}: copy {} in another campaign", i + 1));
        }
    }
    for f in &members[members.len() - 2..] {
        if !matches!(f.rec.level, Level::Bulk) {
            problems.push(format!(
                "{group}: copy #{} is {:?}, not bulk",
                f.rec.n, f.rec.level
            ));
        }
    }
    for f in fed.iter().filter(|f| f.group != group) {
        if first.is_some() && f.rec.campaign == first {
            problems.push(format!("{}: #{} joined {group}", f.group, f.rec.n));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n{}",
        problems.join("\n"),
        explain(name, fed)
    );
}

/// Ordinary mail: every message clean, with a campaign of its own (or
/// none), shared with no other message of the test.
fn expect_apart(name: &str, fed: &[Fed]) {
    let mut problems = Vec::new();
    for (i, f) in fed.iter().enumerate() {
        if !matches!(f.rec.level, Level::Clean) {
            problems.push(format!("#{} ({}) is {:?}", i + 1, f.group, f.rec.level));
        }
        if let Some(c) = f.rec.campaign {
            for (j, g) in fed.iter().enumerate() {
                if j != i && g.rec.campaign == Some(c) {
                    problems.push(format!(
                        "#{} ({}) shares a campaign with #{} ({})",
                        i + 1,
                        f.group,
                        j + 1,
                        g.group
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n{}",
        problems.join("\n"),
        explain(name, fed)
    );
}

/// `phrase` as the reader normalizes text (case, look-alike letters).
fn normalized(phrase: &str) -> String {
    let m = Mail {
        from: "Probe <probe@probe.example>".into(),
        to: to(0),
        subject: "probe".into(),
        body: Body::Plain(phrase.into()),
        attachment: None,
    };
    text_of(&m.raw(0))
}

/// Each copy's normalized text holds `phrase` (read from the archive).
fn expect_read(name: &str, fed: &[Fed], group: &str, phrase: &str) {
    let phrase = normalized(phrase);
    let phrase = phrase.as_str();
    for f in fed.iter().filter(|f| f.group == group) {
        let text = text_of(&f.raw);
        assert!(
            text.contains(phrase),
            "case {name}: #{} lacks {phrase:?} from its archive; text: {text:?}",
            f.rec.n
        );
    }
}

const PEOPLE: [&str; 12] = [
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
    "oscar",
];

fn to(i: usize) -> String {
    let p = PEOPLE[i % PEOPLE.len()];
    format!("{} <{p}@example.net>", capital(p))
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `text` as a small HTML page, one paragraph a line.
fn page(title: &str, text: &str) -> String {
    let mut s = format!("<html><head><title>{title}</title></head><body><h1>{title}</h1>");
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        s.push_str(&format!("<p>{}</p>", line.trim()));
    }
    s.push_str("</body></html>");
    s
}

/// A Word document as the minimum a reader needs: `word/document.xml`
/// (one paragraph a line) and its content types, zipped.
fn word_like(text: &str) -> Vec<u8> {
    let mut body = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        body.push_str(&format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", line.trim()));
    }
    let doc = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\
         <w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">\
         <w:body>{body}</w:body></w:document>"
    );
    let types = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
        <Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">\
        <Default Extension=\"xml\" ContentType=\"application/xml\"/>\
        <Override PartName=\"/word/document.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/>\
        </Types>";
    zip(&[
        ("[Content_Types].xml", types.as_bytes()),
        ("word/document.xml", doc.as_bytes()),
    ])
}

/// An unrelated ordinary message, to sit beside a campaign.
fn bystander() -> Mail {
    Mail {
        from: "Nora Field <nora@gardenclub.example>".into(),
        to: "Peter <peter@example.net>".into(),
        subject: "Allotment meeting on Saturday".into(),
        body: Body::Plain(
            "Hi Peter,\n\nthe allotment committee meets on Saturday at ten in the shed behind \
             the greenhouse. We will talk about the new water butts, the compost rota for \
             the summer and whether to buy a second wheelbarrow. Bring your seed list if \
             you want to join the bulk order of beans and squash.\n\nSee you there,\nNora\n"
                .into(),
        ),
        attachment: None,
    }
}

// ---------------------------------------------------------------------
// Attack cases
// ---------------------------------------------------------------------

const PARCEL_HTML: &str = "<html><head><title>Delivery notice</title></head><body>\
<h1>Delivery attempt failed</h1>\
<p>Our courier could not deliver your parcel because the customs clearance fee of \
2.99 EUR has not been paid. To arrange a new delivery date, confirm your home address \
and settle the outstanding fee through our secure payment page below.</p>\
<p>Parcels that are not claimed within five working days are returned to the sender \
and an additional storage charge applies for every further day.</p>\
<p><a href=\"https://parcel-redeliver.example/track?id=REF\">Arrange redelivery now</a></p>\
<p>Thank you for choosing our express service. Shipment reference REF.</p>\
</body></html>";

/// Case 1: ZipCrypto, HTML inside, English statements in varied shapes.
#[test]
fn attack_zipcrypto_html_english_shapes() {
    let statements = [
        "Password: {P}",
        "The archive password is {P}",
        "Your delivery notice is attached (password: {P}).",
        "Use PIN {P} to open the attached notice.",
        "Password for the attachment: {P}",
        "The password is {P}, please open the file to reschedule.",
        "PASSWORD: {P}",
    ];
    let names = [
        "notice.zip",
        "Delivery_Notice_4471.zip",
        "parcel-info.zip",
        "DHL_document.zip",
        "shipment.zip",
        "redelivery_form.zip",
        "NOTICE_0031.zip",
    ];
    let mut msgs = vec![msg("other", 100, &bystander())];
    for i in 0..7 {
        let pw = format!("{}", 4411 + i * 1379);
        let page = PARCEL_HTML.replace("REF", &format!("PX{}", 88_120 + i * 17));
        let z = encrypted_zip(&[("notice.html", page.as_bytes())], &pw, false);
        let m = Mail {
            from: format!("Parcel Service <noreply{i}@parcel-track{i}.example>"),
            to: to(i),
            subject: format!("Delivery notice {}", 2000 + i * 31),
            body: Body::Plain(statements[i].replace("{P}", &pw)),
            attachment: Some((names[i].into(), z)),
        };
        msgs.push(msg("parcel", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read("attack 1", &fed, "parcel", "customs clearance fee");
    expect_campaign("attack 1", &fed, "parcel");
}

const INVOICE_TXT: &str = "FINAL REMINDER\r\n\r\n\
Despite several reminders the invoice for your subscription remains unpaid. \
The outstanding balance must be transferred within forty eight hours, otherwise \
the claim will be handed over to an external collection agency and further legal \
costs will be added to the amount.\r\n\r\n\
Please transfer the full amount to the account stated below and quote your \
customer number as the payment reference. If you have already paid, kindly \
ignore this letter and send us the transfer receipt.\r\n\r\n\
Customer number: CUST\r\nAccounts receivable department\r\n";

/// Case 2: AES-256, an HTML page inside, statements in seven languages.
#[test]
fn attack_aes_text_languages() {
    let statements = [
        "Passwort: {P}",
        "Mot de passe : {P}",
        "Contraseña: {P}",
        "Senha: {P}",
        "Wachtwoord: {P}",
        "La password è {P}",
        "Hasło: {P}",
    ];
    let passwords = ["5521", "8812", "3390", "7781", "2290", "6612", "4410"];
    let names = [
        "Rechnung.zip",
        "facture.zip",
        "factura.zip",
        "fatura.zip",
        "factuur.zip",
        "fattura.zip",
        "faktura.zip",
    ];
    let mut msgs = vec![msg("other", 200, &bystander())];
    for i in 0..7 {
        let text = INVOICE_TXT.replace("CUST", &format!("{}", 310_450 + i * 7));
        let html = page("Final reminder", &text);
        let z = encrypted_zip(
            &[(&format!("invoice_{i}.html"), html.as_bytes())],
            passwords[i],
            true,
        );
        let m = Mail {
            from: format!("Billing <billing@invoices{i}.example>"),
            to: to(i + 3),
            subject: format!("{} {}", names[i].trim_end_matches(".zip"), 7700 + i),
            body: Body::Plain(statements[i].replace("{P}", passwords[i])),
            attachment: Some((names[i].into(), z)),
        };
        msgs.push(msg("invoice", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read("attack 2", &fed, "invoice", "external collection agency");
    expect_campaign("attack 2", &fed, "invoice");
}

/// Case 3: AES-256, a Word document inside, the password only in the subject.
#[test]
fn attack_aes_docx_password_in_subject() {
    let subjects = [
        "Mailbox notice - password: {P}",
        "Action required (password: {P})",
        "Your document, password {P}",
        "Storage warning | Password: {P}",
        "Important: the password is {P}",
        "Account document [password: {P}]",
        "Password: {P} - quota notice",
    ];
    let names = [
        "quota.zip",
        "Mailbox_Notice.zip",
        "document.zip",
        "storage-warning.zip",
        "IT_notice.zip",
        "account.zip",
        "notice_q.zip",
    ];
    let paragraphs = vec![
        vec!["Mailbox storage quota exceeded".to_owned()],
        vec![
            "Your mailbox storage quota has been exceeded and incoming messages are now being held on our server.".to_owned(),
            "To release the held messages and avoid the deactivation of your account, you must verify your login details within twenty four hours.".to_owned(),
        ],
        vec![
            "Open the verification portal, sign in with your current email password and confirm the upgrade of your storage plan at no extra cost.".to_owned(),
            "Accounts that are not verified in time will be closed and all stored mail will be permanently deleted.".to_owned(),
        ],
        vec!["Email administration team".to_owned()],
    ];
    let doc = docx(&paragraphs);
    let mut msgs = vec![msg("other", 300, &bystander())];
    for i in 0..7 {
        let pw = format!(
            "{}{}",
            ["vault", "mail", "box", "key", "door", "gate", "lock"][i],
            40 + i * 3
        );
        let z = encrypted_zip(&[("Mailbox_Notice.docx", &doc)], &pw, true);
        let m = Mail {
            from: format!("Mail Admin <admin@mail-support{i}.example>"),
            to: to(i + 5),
            subject: subjects[i].replace("{P}", &pw),
            body: Body::Plain("Please see the attached document.".into()),
            attachment: Some((names[i].into(), z)),
        };
        msgs.push(msg("quota", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read("attack 3", &fed, "quota", "mailbox storage quota");
    expect_campaign("attack 3", &fed, "quota");
}

const INVEST_HTML: &str = "<!DOCTYPE html><html><body>\
<h2>Exclusive investment invitation</h2>\
<p>Our automated trading platform has delivered guaranteed weekly returns to thousands \
of private investors across Europe. Members who join this month receive a personal \
account manager and a welcome bonus on their first deposit.</p>\
<p>Registration takes less than two minutes. Deposit a small starting amount today, \
watch your balance grow every single day and withdraw your profits whenever you like.</p>\
<p>Places in the program are limited, so secure yours before the offer closes.</p>\
<p><a href=\"https://smart-invest.example/join\">Open my account</a></p>\
</body></html>";

/// Case 4: ZipCrypto, a nested zip inside, the statement in an HTML body, the
/// password in quotes with punctuation.
#[test]
fn attack_zipcrypto_nested_html_body_quoted_punctuated() {
    let passwords = [
        "Q7#k-22", "R2$m-90", "Z5!p-31", "T8%w-47", "K3&v-65", "M9@x-12", "B4*n-78",
    ];
    let statements = [
        "<p>Your invitation is protected. Password: <b>\"{P}\"</b></p>",
        "<div>The password is &quot;{P}&quot;</div>",
        "<p>Open the file with password: '{P}'</p>",
        "<p>Password: \u{201c}{P}\u{201d}</p>",
        "<p><span>The archive password is</span> <strong>\"{P}\"</strong></p>",
        "<table><tr><td>Password:</td><td>\"{P}\"</td></tr></table>",
        "<p>(password: \"{P}\")</p>",
    ];
    let names = [
        "invitation.zip",
        "Invest_2024.zip",
        "offer.zip",
        "platform_info.zip",
        "members.zip",
        "bonus-details.zip",
        "register.zip",
    ];
    let inner = zip(&[("offer.html", INVEST_HTML.as_bytes())]);
    let mut msgs = vec![msg("other", 400, &bystander())];
    for i in 0..7 {
        let html = format!(
            "<html><body>{}</body></html>",
            statements[i].replace("{P}", &passwords[i].replace('&', "&amp;"))
        );
        let z = encrypted_zip(&[("offer.zip", &inner)], passwords[i], false);
        let m = Mail {
            from: format!("Smart Invest <team@smart-invest{i}.example>"),
            to: to(i + 2),
            subject: format!("Your personal invitation #{}", 510 + i * 13),
            body: Body::Html(html),
            attachment: Some((names[i].into(), z)),
        };
        msgs.push(msg("invest", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read("attack 4", &fed, "invest", "guaranteed weekly returns");
    expect_campaign("attack 4", &fed, "invest");
}

const PRIZE_TXT: &str = "Congratulations!\r\n\r\n\
Your email address was selected in our annual international lottery draw and you \
have won a cash prize of two hundred thousand euros. To release the winnings to \
your bank account, contact our claims agent and provide your full name, date of \
birth and a copy of your passport.\r\n\r\n\
A small processing fee is required before the transfer can be made. Keep this \
notification confidential until your claim has been processed, to avoid double \
claims and abuse of the program.\r\n\r\nClaims department, winning ticket WIN\r\n";

/// Case 5: ZipCrypto, a Word-like document (`word/document.xml`) inside, decoy
/// "code" and "PIN" before the real "Password:" statement.
#[test]
fn attack_decoys_before_password() {
    let passwords = [
        "Lm84qt", "Xw19rb", "Pz62ka", "Hd37uf", "Vc05ny", "Jg48se", "Tr71mo",
    ];
    let bodies = [
        "Your claim code is {C} and your PIN is {N}. Password: {P}",
        "Ticket code {C}, security pin {N}, Password: {P}",
        "Reference code: {C}. Bank PIN: {N}. Password: {P}",
        "Keep your code {C} and pin {N} safe. Password: {P}",
        "Claim code {C} / PIN {N} / Password: {P}",
        "Winner code {C}; verification pin {N}; Password: {P}",
        "code {C} pin {N} Password: {P}",
    ];
    let names = [
        "prize.zip",
        "winner_notice.zip",
        "claim.zip",
        "lottery-result.zip",
        "award.zip",
        "Claim_Form.zip",
        "notification.zip",
    ];
    let mut msgs = vec![msg("other", 500, &bystander())];
    for i in 0..7 {
        let text = PRIZE_TXT.replace("WIN", &format!("{}", 93_000 + i * 211));
        let z = encrypted_zip(
            &[("claim_form.docx", &word_like(&text))],
            passwords[i],
            false,
        );
        let body = bodies[i]
            .replace("{C}", &format!("{}", 58_213 + i * 97))
            .replace("{N}", &format!("{:04}", 42 + i * 1111))
            .replace("{P}", passwords[i]);
        let m = Mail {
            from: format!("Lottery Board <claims@lotto-board{i}.example>"),
            to: to(i + 4),
            subject: format!("Winning notification {}", 88 + i),
            body: Body::Plain(body),
            attachment: Some((names[i].into(), z)),
        };
        msgs.push(msg("prize", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read("attack 5", &fed, "prize", "international lottery draw");
    expect_campaign("attack 5", &fed, "prize");
}

/// Case 6: AES-256, a plain text file inside ("the archive password is").
#[test]
fn attack_aes_text_file_inside() {
    let names = [
        "readme.zip",
        "Payment_Info.zip",
        "details.zip",
        "transfer.zip",
        "info_2024.zip",
        "letter.zip",
        "README_NOW.zip",
    ];
    let mut msgs = vec![msg("other", 600, &bystander())];
    for i in 0..7 {
        let pw = format!(
            "tx{}-{}",
            17 + i * 9,
            ["ka", "mo", "ri", "te", "lu", "po", "ne"][i]
        );
        let text = INVOICE_TXT.replace("CUST", &format!("{}", 920_110 + i * 3));
        let z = encrypted_zip(&[("payment_details.txt", text.as_bytes())], &pw, true);
        let m = Mail {
            from: format!("Accounts <ar@collect{i}.example>"),
            to: to(i + 6),
            subject: format!("Final reminder {}", 400 + i),
            body: Body::Plain(format!("The archive password is {pw}")),
            attachment: Some((names[i].into(), z)),
        };
        msgs.push(msg("textfile", i + 1, &m));
    }
    let fed = replay(msgs);
    // For a failure: whether the same text file is read from a plain zip.
    let plain = Mail {
        from: "Accounts <ar@collect.example>".into(),
        to: to(0),
        subject: "Final reminder".into(),
        body: Body::Plain("See the attached file.".into()),
        attachment: Some((
            "readme.zip".into(),
            zip(&[("payment_details.txt", INVOICE_TXT.as_bytes())]),
        )),
    };
    println!(
        "the same text file in a plain zip reads as: {:?}",
        text_of(&plain.raw(0))
    );
    expect_campaign("attack 6", &fed, "textfile");
    expect_read("attack 6", &fed, "textfile", "external collection agency");
}

// ---------------------------------------------------------------------
// Ordinary cases
// ---------------------------------------------------------------------

/// Case 1: Two people each send one colleague an encrypted payroll archive.
#[test]
fn ordinary_two_payroll_archives_apart() {
    let slip = "Payslip March 2024\r\n\r\nEmployee: Robert Lang, warehouse logistics.\r\n\
Gross salary 3,450.00 EUR. Income tax withheld 612.40 EUR, pension insurance 320.85 EUR, \
health insurance 251.85 EUR. Overtime bonus for the inventory weekend 180.00 EUR. \
Net pay transferred to the account ending 4471 on the last working day of the month.\r\n\
Remaining holiday entitlement: fourteen days.\r\n";
    let review = "Salary review of the design team, first quarter\r\n\r\n\
Proposed adjustments after the annual performance talks: Maria moves to senior designer \
with a raise of six percent, Tom keeps his current band but receives a one-off bonus \
for the rebranding project, and the two interns are offered permanent contracts from June.\r\n\
The budget impact stays below the amount agreed with the board in January. Please keep \
these figures confidential until the letters have been signed.\r\n";
    let a = Mail {
        from: "Helga Brandt <helga@acme-hr.example>".into(),
        to: "Robert Lang <robert@acme-hr.example>".into(),
        subject: "Your payslip".into(),
        body: Body::Plain("Hi Robert, here is your payslip. Password: Pay-2024!".into()),
        attachment: Some((
            "payslip_march.zip".into(),
            encrypted_zip(
                &[("payslip_march.html", page("Payslip", slip).as_bytes())],
                "Pay-2024!",
                true,
            ),
        )),
    };
    let b = Mail {
        from: "Sam Ortiz <sam@studio-north.example>".into(),
        to: "Lena Voss <lena@studio-north.example>".into(),
        subject: "Q1 salary review".into(),
        body: Body::Plain("Lena, the figures are attached, the password is Q1sal#77".into()),
        attachment: Some((
            "salaries_q1.zip".into(),
            encrypted_zip(&[("review.docx", &word_like(review))], "Q1sal#77", false),
        )),
    };
    let fed = replay(vec![
        msg("payslip", 1, &a),
        msg("other", 2, &bystander()),
        msg("review", 3, &b),
    ]);
    expect_read("ordinary 1", &fed, "payslip", "warehouse logistics");
    expect_read("ordinary 1", &fed, "review", "design team");
    expect_apart("ordinary 1", &fed);
}

/// Case 2: Mail that speaks of passwords, without any archive.
#[test]
fn ordinary_password_words_without_archive() {
    let newsletter = Mail {
        from: "Tech Weekly <news@techweekly.example>".into(),
        to: "Erin <erin@example.net>".into(),
        subject: "This week: password reset flows done right".into(),
        body: Body::Html(
            "<html><body><h1>Tech Weekly</h1><p>This week we look at password reset flows: \
             why a reset link should expire after one hour, why the password reset page must \
             never reveal whether an address has an account, and how passkeys change the \
             picture for small shops.</p><p>Also inside: a review of three open source \
             monitoring tools and an interview with the maintainer of a popular web \
             framework.</p></body></html>"
                .into(),
        ),
        attachment: None,
    };
    let it = Mail {
        from: "IT Desk <it@firm.example>".into(),
        to: "Frank <frank@firm.example>".into(),
        subject: "New password policy from April".into(),
        body: Body::Plain(
            "Dear colleagues,\n\nfrom the first of April passwords must be at least fourteen \
             characters long and will no longer expire every ninety days. The password: field \
             on the login page will also accept passphrases with spaces. Please do not send \
             passwords by email and use the password manager the company provides.\n\nIT Desk\n"
                .into(),
        ),
        attachment: None,
    };
    let wifi = Mail {
        from: "Grace <grace@home.example>".into(),
        to: "Heidi <heidi@example.net>".into(),
        subject: "Wifi for the weekend".into(),
        body: Body::Plain(
            "Hi Heidi, looking forward to having you over! The wifi network is called \
             GardenHouse and the password is hunter2-blue. The key to the back door is under \
             the flower pot. See you Friday, Grace"
                .into(),
        ),
        attachment: None,
    };
    let fed = replay(vec![
        msg("news", 1, &newsletter),
        msg("it", 2, &it),
        msg("wifi", 3, &wifi),
        msg("other", 4, &bystander()),
    ]);
    expect_read("ordinary 2", &fed, "news", "password reset");
    expect_apart("ordinary 2", &fed);
}

/// Case 3: Five senders, the same password "1234", the same body line and
/// file name, each their own document.
#[test]
fn ordinary_same_password_different_documents() {
    let docs = [
        (
            "quote",
            "Quotation for the renovation of the kitchen: removal of the old cabinets, new \
          plumbing for the sink and dishwasher, tiling of the back wall and installation of the \
          worktop. The work takes about two weeks and can start in May once the deposit is paid.",
        ),
        (
            "minutes",
            "Minutes of the parents association meeting: the summer fair will take place \
          on the school field, the bake sale raised enough money for new library books, and \
          volunteers are still needed to supervise the bouncy castle in the afternoon.",
        ),
        (
            "cv",
            "Curriculum vitae of a mechanical engineer with nine years of experience in \
          hydraulic systems, fluent in Spanish and German, responsible for the test bench of a \
          tractor manufacturer and author of two papers on valve wear.",
        ),
        (
            "travel",
            "Travel plan for the conference in Lisbon: flight on Tuesday morning, hotel \
          near the river for three nights, the workshop on Wednesday afternoon and a dinner \
          with the organizers on Thursday before the return flight.",
        ),
        (
            "lease",
            "Tenancy agreement for the flat on the second floor: monthly rent including \
          heating, a deposit of three months, pets allowed after written consent of the \
          landlord, and a notice period of three months for both sides.",
        ),
    ];
    let mut msgs = Vec::new();
    for (i, (g, text)) in docs.iter().enumerate() {
        let z = encrypted_zip(
            &[("scan.html", page("Scan", text).as_bytes())],
            "1234",
            i % 2 == 0,
        );
        let m = Mail {
            from: format!("{} <{g}@sender{i}.example>", capital(g)),
            to: to(i),
            subject: "Document".into(),
            body: Body::Plain("The password is 1234".into()),
            attachment: Some(("scan.zip".into(), z)),
        };
        msgs.push(Msg {
            group: match i {
                0 => "quote",
                1 => "minutes",
                2 => "cv",
                3 => "travel",
                _ => "lease",
            },
            raw: m.raw(i + 1),
        });
    }
    let fed = replay(msgs);
    expect_read("ordinary 3", &fed, "quote", "renovation of the kitchen");
    expect_read("ordinary 3", &fed, "minutes", "parents association");
    expect_read("ordinary 3", &fed, "cv", "hydraulic systems");
    expect_read("ordinary 3", &fed, "travel", "conference in lisbon");
    expect_read("ordinary 3", &fed, "lease", "tenancy agreement");
    expect_apart("ordinary 3", &fed);
}

/// Case 4: Archives without a stated password, or with a stated one that does
/// not open them: skipped, and such mail stays ordinary.
#[test]
fn ordinary_archive_without_working_password_skipped() {
    let contract = "Draft contract for the sale of the sailing boat, hull number and \
engine hours as inspected at the marina, payment in two instalments.";
    let medical = "Radiology findings of the knee examination: no fracture, mild swelling of \
the soft tissue, physiotherapy recommended for six weeks.";
    let budget = "Budget plan of the choir for the autumn tour: bus rental, accommodation in \
the youth hostel and the fee of the accompanying pianist.";
    let none = Mail {
        from: "Uwe <uwe@boats.example>".into(),
        to: "Karl <karl@example.net>".into(),
        subject: "Contract draft".into(),
        body: Body::Plain(
            "Karl, attached the draft. I will tell you the password by phone.".into(),
        ),
        attachment: Some((
            "contract.zip".into(),
            encrypted_zip(
                &[("contract.html", page("Contract", contract).as_bytes())],
                "sail-7731",
                true,
            ),
        )),
    };
    let wrong = Mail {
        from: "Dr. Meyer <praxis@ortho-meyer.example>".into(),
        to: "Judy <judy@example.net>".into(),
        subject: "Your findings".into(),
        body: Body::Plain("Dear Judy, your findings are attached. Password: 4411".into()),
        attachment: Some((
            "findings.zip".into(),
            encrypted_zip(
                &[("findings.docx", &word_like(medical))],
                "kn33-Rx90",
                false,
            ),
        )),
    };
    let separate = Mail {
        from: "Choir Treasurer <money@choir.example>".into(),
        to: "Oscar <oscar@example.net>".into(),
        subject: "Tour budget".into(),
        body: Body::Plain("The password follows in a separate message.".into()),
        attachment: Some((
            "budget.zip".into(),
            encrypted_zip(
                &[("budget.html", page("Budget", budget).as_bytes())],
                "tenor&bass",
                false,
            ),
        )),
    };
    let fed = replay(vec![
        msg("none", 1, &none),
        msg("wrong", 2, &wrong),
        msg("separate", 3, &separate),
        msg("other", 4, &bystander()),
    ]);
    for (g, word) in [
        ("none", "sailing boat"),
        ("wrong", "radiology"),
        ("separate", "pianist"),
    ] {
        let f = fed.iter().find(|f| f.group == g).unwrap();
        let text = text_of(&f.raw);
        let word = normalized(word);
        assert!(
            !text.contains(&word),
            "ordinary 4: {g}'s archive was read without its password: {text:?}"
        );
    }
    expect_apart("ordinary 4", &fed);
}

/// Case 5: One person sends the same encrypted document to two colleagues.
#[test]
fn ordinary_same_archive_to_two_colleagues() {
    let plan = "Shift plan for the night team in April: the late shift starts at eight, \
handover notes go into the blue binder, and the weekend rota rotates every fortnight.";
    let z = encrypted_zip(
        &[("shifts.html", page("Shifts", plan).as_bytes())],
        "Night-0424",
        true,
    );
    let mut msgs = vec![msg("other", 10, &bystander())];
    for (i, who) in [
        "Ivan <ivan@clinic.example>",
        "Mallory <mallory@clinic.example>",
    ]
    .iter()
    .enumerate()
    {
        let m = Mail {
            from: "Ward Lead <lead@clinic.example>".into(),
            to: (*who).into(),
            subject: "April shifts".into(),
            body: Body::Plain("Here is the April plan. Password: Night-0424".into()),
            attachment: Some(("shifts.zip".into(), z.clone())),
        };
        msgs.push(msg("shifts", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read("ordinary 5", &fed, "shifts", "night team");
    for f in &fed {
        assert!(
            matches!(f.rec.level, Level::Clean),
            "ordinary 5: #{} is {:?}\n{}",
            f.rec.n,
            f.rec.level,
            explain("ordinary 5", &fed)
        );
    }
    let shifts: Vec<&Fed> = fed.iter().filter(|f| f.group == "shifts").collect();
    let other = fed.iter().find(|f| f.group == "other").unwrap();
    assert!(
        other.rec.campaign.is_none() || shifts.iter().all(|f| f.rec.campaign != other.rec.campaign),
        "ordinary 5: the bystander joined the shift plan\n{}",
        explain("ordinary 5", &fed)
    );
}
