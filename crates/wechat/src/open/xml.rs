//! The platform's pushes are flat XML: `<xml>` holding one element per field, each a text or
//! a CDATA section. This reads exactly that (no attributes, no namespaces, no DTD); an element
//! holding elements is kept as its raw text. Linear in the input; nothing is resolved from
//! outside it.
use std::collections::BTreeMap;

/// The fields of `<xml>…</xml>`, by element name (a repeated name keeps its first value).
pub fn parse_flat(input: &str) -> Result<BTreeMap<String, String>, String> {
    let mut rest = input.trim_start_matches('\u{feff}').trim();
    if let Some(after) = rest.strip_prefix("<?xml") {
        rest = after.split_once("?>").ok_or("unterminated XML declaration")?.1.trim_start();
    }
    let mut rest = rest.strip_prefix("<xml>").ok_or("the document is not <xml>")?;
    let mut fields = BTreeMap::new();
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("</xml>") {
            if !after.trim().is_empty() {
                return Err("content after </xml>".into());
            }
            return Ok(fields);
        }
        let after_lt = rest.strip_prefix('<').ok_or("text outside an element")?;
        let (tag, after_tag) = after_lt.split_once('>').ok_or("unterminated tag")?;
        if let Some(name) = tag.strip_suffix('/') {
            check_name(name.trim_end())?;
            fields.entry(name.trim_end().to_owned()).or_insert_with(String::new);
            rest = after_tag;
            continue;
        }
        check_name(tag)?;
        let close = format!("</{tag}>");
        let (value, after_close) = if let Some(cdata) = after_tag.strip_prefix("<![CDATA[") {
            let (value, after) = cdata.split_once("]]>").ok_or("unterminated CDATA")?;
            let after = after.trim_start().strip_prefix(close.as_str()).ok_or_else(|| format!("{tag} is not closed after its CDATA"))?;
            (value.to_owned(), after)
        } else {
            let (raw, after) = after_tag.split_once(close.as_str()).ok_or_else(|| format!("{tag} is not closed"))?;
            let value = if raw.trim_start().starts_with('<') { raw.to_owned() } else { unescape(raw)? };
            (value, after)
        };
        fields.entry(tag.to_owned()).or_insert(value);
        rest = after_close;
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok { Ok(()) } else { Err(format!("unexpected tag <{}>", atrium_kernel::shown(name, 40))) }
}

/// The value of the first element `name` of `<xml>…</xml>` (a text or a CDATA section), found
/// without reading the rest of the document: for a value needed before the document can be
/// trusted, such as the part a signature covers. `None` when there is no such element or it is
/// not closed.
pub fn element(input: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let (_, after) = input.split_once(open.as_str())?;
    let after = after.trim_start();
    if let Some(cdata) = after.strip_prefix("<![CDATA[") {
        let (value, rest) = cdata.split_once("]]>")?;
        rest.trim_start().starts_with(close.as_str()).then(|| value.to_owned())
    } else {
        let (raw, _) = after.split_once(close.as_str())?;
        unescape(raw).ok()
    }
}

/// Text with the five named entities and numeric character references resolved.
fn unescape(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let (entity, after) = rest[i + 1..].split_once(';').ok_or("unterminated entity")?;
        let c = match entity {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            e => {
                let code = match e.strip_prefix("#x").or_else(|| e.strip_prefix("#X")) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => e.strip_prefix('#').and_then(|d| d.parse().ok()),
                };
                // The entity is the sender's text: shown escaped and cut, never as a line of its own.
                code.and_then(char::from_u32).ok_or_else(|| format!("unknown entity &{};", atrium_kernel::shown(e, 40)))?
            }
        };
        out.push(c);
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdata_text_entities_and_empty_elements_are_read() {
        let f = parse_flat(
            "<?xml version=\"1.0\"?>\n<xml>\n <AppId><![CDATA[wx1]]></AppId><CreateTime>1413192605</CreateTime>\
             <Reason>a &lt;b&gt; &amp; &#20013;&#x6587;</Reason><Empty/><Nested><A>1</A></Nested></xml>",
        )
        .unwrap();
        assert_eq!(f["AppId"], "wx1");
        assert_eq!(f["CreateTime"], "1413192605");
        assert_eq!(f["Reason"], "a <b> & 中文");
        assert_eq!(f["Empty"], "");
        assert_eq!(f["Nested"], "<A>1</A>");
    }

    #[test]
    fn cdata_may_hold_markup_and_the_first_of_a_repeated_name_wins() {
        let f = parse_flat("<xml><R><![CDATA[<b>x</b> ]]></R><R>second</R></xml>").unwrap();
        assert_eq!(f["R"], "<b>x</b> ");
    }

    #[test]
    fn one_element_is_read_without_the_rest() {
        let doc = "<xml><ToUserName>&evil\r\nINFO forged;</ToUserName><Encrypt><![CDATA[c2VjcmV0]]></Encrypt></xml>";
        assert!(parse_flat(doc).is_err(), "the rest does not parse");
        assert_eq!(element(doc, "Encrypt").as_deref(), Some("c2VjcmV0"));
        assert_eq!(element("<xml><Encrypt>a&amp;b</Encrypt></xml>", "Encrypt").as_deref(), Some("a&b"));
        for bad in
            ["", "<xml></xml>", "<xml><Encrypt>x</xml>", "<xml><Encrypt><![CDATA[x</Encrypt></xml>", "<xml><Encrypt>&bad;</Encrypt></xml>"]
        {
            assert_eq!(element(bad, "Encrypt"), None, "{bad:?}");
        }
    }

    #[test]
    fn the_senders_text_in_an_error_is_escaped_and_cut() {
        let err = parse_flat("<xml><A>&x\r\nERROR forged line;</A></xml>").unwrap_err();
        assert!(!err.contains('\n') && !err.contains('\r'), "{err}");
        assert!(err.contains("\\r\\nERROR"), "{err}");
        let long = format!("<xml><A>&{};</A></xml>", "y".repeat(5000));
        assert!(parse_flat(&long).unwrap_err().len() < 100);
        let err = parse_flat("<xml><A\nB>1</A\nB></xml>").unwrap_err();
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn anything_else_is_an_error_not_a_panic() {
        for bad in [
            "",
            "<root></root>",
            "<xml>",
            "<xml><A>1</xml>",
            "<xml><A><![CDATA[x</A></xml>",
            "<xml>text</xml>",
            "<xml><A b=\"1\">x</A></xml>",
            "<xml><A>&bogus;</A></xml>",
            "<xml></xml>trailing",
            "<?xml <xml></xml>",
        ] {
            assert!(parse_flat(bad).is_err(), "{bad:?}");
        }
    }
}
