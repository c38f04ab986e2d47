// Receipts as badges in the displayed messages (decisions STX-6). Display only: SillyTavern's
// message formatter runs these hooks each time it turns a message into HTML, so the stored message, the prompt
// and the chat file keep every tag as the server wrote it.
//
// A receipt is a tag the engine has judged: `[clock: name="Alarm raised" tick="2" result="ok" now="2/6"]`. No
// value holds a bracket (the engine's rule), so a receipt runs from `[name:` to the first `]`; a value is in
// double quotes, a quote or backslash in it escaped with a backslash. A tag without `result` is not a receipt
// (the server has not judged it) and is left as it is.

import { REASON_WORDS } from './reasons.js';

const RECEIPT = /\[[ \t]*(sheet|clock|check|edit)[ \t]*:([^[\]]*)\]/gi;
const ATTR = /([A-Za-z_][\w.-]*)(?:[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)")?/g;
const OPEN = '\uE000'; // placeholders of the private use area: markdown and SillyTavern's quote styling leave them be
const CLOSE = '\uE001';
const TOKEN = /\uE000(\d+)\uE001/g;

/** The attributes of a tag's inside, in order: `{name: value}`, a bare flag as `true`. */
export function attributesOf(inside) {
    const out = {};
    for (const m of inside.matchAll(ATTR)) {
        if (!(m[1] in out)) {
            out[m[1]] = m[2] === undefined ? true : m[2].replace(/\\(.)/g, '$1');
        }
    }
    return out;
}

/** Each receipt of `text`: `{start, end, tag, attrs, text}`. */
export function receiptsIn(text) {
    const out = [];
    for (const m of String(text).matchAll(RECEIPT)) {
        const attrs = attributesOf(m[2]);
        if (typeof attrs.result === 'string') {
            out.push({ start: m.index, end: m.index + m[0].length, tag: m[1].toLowerCase(), attrs, text: m[0] });
        }
    }
    return out;
}

/** A refusal's reason in words (never a rule ID). */
export function reasonWords(reason) {
    if (typeof reason !== 'string' || !reason) {
        return 'refused';
    }
    // `who="party"` receipts say `Bram: insufficient; Mira: hidden`
    return reason.split(/;\s*/).map(part => {
        const [who, code] = part.includes(': ') ? part.split(': ', 2) : [null, part];
        const words = REASON_WORDS[code.trim()] ?? code.trim();
        return who ? `${who}: ${words}` : words;
    }).join('; ');
}

function signed(n) {
    const v = Number(n);
    return Number.isFinite(v) && v > 0 ? `+${v}` : String(n).replace('-', '\u2212');
}

// The ruleset's own words (the state answer's `sheet.words`): a label by id, for what a tag names by its id
// (`pool="stress"` is the sheet's "Stress"), and the party sheet's label ("Crew"). Set by the panel's last state;
// a receipt drawn before any keeps the tag's own word.
let words = { labels: {}, party: null };

/** The words of the campaign on screen (the state answer's `sheet.words`); true when they changed. */
export function setWords(next) {
    const given = { labels: next?.labels ?? {}, party: next?.party ?? null };
    const changed = JSON.stringify(given) !== JSON.stringify(words);
    words = given;
    return changed;
}

/** A name a tag gives by id or label, as the sheet says it: the label of that id (case aside), else as written. */
function label(name) {
    if (typeof name !== 'string') return name;
    const labels = words.labels ?? {};
    return labels[name] ?? labels[name.toLowerCase()] ?? name;
}

function subjectOf(a) {
    return a.who ?? (a.sheet === 'party' ? (words.party ?? 'Party sheet') : a.sheet) ?? '';
}

function sheetLine(a) {
    const who = subjectOf(a);
    const now = a.now ?? '';
    const amount = a.amount ?? '1';
    switch (a.op) {
        case 'spend': return `${who}: ${label(a.pool) ?? a.row} ${signed(-Math.abs(Number(amount)) || `-${amount}`)} \u2192 ${now}`;
        case 'restore': return `${who}: ${label(a.pool) ?? a.row} ${signed(amount)} \u2192 ${now}`;
        case 'damage': return a.track
            ? `${who}: ${label(a.track)}${a.kind ? ` (${a.kind})` : ''} \u2192 ${now}`
            : `${who}: ${label(a.pool)} ${signed(-Math.abs(Number(amount)) || `-${amount}`)} \u2192 ${now}`;
        case 'track': return `${who}: ${label(a.track)} \u2192 ${now}`;
        case 'state': return `${who}: ${label(a.state)} \u2192 ${now}`;
        case 'condition': return `${who}: ${a.condition} ${now}`;
        case 'text': return `${who}: ${a.text} \u2192 ${now || '(cleared)'}`;
        case 'rest': return `${who}: ${a.rest} \u2192 ${now}`;
        case 'advance': return `${who}: ${a.field} \u2192 ${now}`;
        default: return `${who}: ${a.op ?? 'sheet'} \u2192 ${now}`;
    }
}

function clockLine(a) {
    if (a.clear) return `${a.name}: cleared`;
    if (a.size !== undefined && a.tick === undefined) return `${a.name}: new clock, ${a.now}`;
    if (a.tick !== undefined) return `${a.name} ${signed(a.tick)} \u2192 ${a.now}`;
    return `${a.name}: ${a.now}`;
}

function checkLine(a) {
    const what = a.skill ?? a.ability ?? a.save ?? 'check';
    const head = `${a.who ? `${a.who} \u00b7 ` : ''}${what}${a.with ? ` with ${a.with}` : ''}`;
    const outcome = a.outcome ? ` \u2192 ${a.outcome}` : '';
    if (a.rolled !== undefined) {
        return `${head}: ${String(a.rolled).split(',').join(' ')}${a.target ? ` (${a.target}+ succeeds, ${a.successes} succeeded)` : ''}${outcome}`;
    }
    if (a.roll !== undefined) {
        return `${head}: ${a.roll}${a.total ? ` ${a.total}` : ''} = ${a.sum}${a.dc ? ` vs ${a.dc}` : ''}${outcome}`;
    }
    return `${head}${outcome}`;
}

function editLine(a) {
    const who = a.who ?? (words.party ? `${words.party} sheet` : 'Party sheet');
    return `${who}: ${a.now ?? 'changed'} by a player`;
}

/** What a badge says: `{kind, result, text, detail}`; `detail` is the receipt itself, for its tooltip. */
export function describe(r) {
    const a = r.attrs;
    const result = a.result;
    let text;
    if (result === 'refused') {
        // a tag the engine could not read names no one: its kind goes first ("Sheet tag could not be read...")
        const unread = a.raw !== undefined || a.reason === 'malformed';
        const what = unread ? null : r.tag === 'clock' ? a.name
            : r.tag === 'check' ? checkLine({ ...a, outcome: undefined }) : subjectOf(a) || r.tag;
        text = what ? `${what}: ${reasonWords(a.reason)}`
            : `${capitalized(r.tag)} tag: ${reasonWords(a.reason).replace(/^the tag /, '')}`;
    } else if (r.tag === 'clock') {
        text = clockLine(a);
    } else if (r.tag === 'check') {
        text = checkLine(a);
    } else if (r.tag === 'edit') {
        text = editLine(a);
    } else {
        text = sheetLine(a);
        if (result === 'partial') text += ` (${reasonWords(a.reason)})`;
    }
    return { kind: r.tag, result, text, detail: r.text };
}

function capitalized(s) {
    return s ? s[0].toUpperCase() + s.slice(1) : s;
}

function escaped(s) {
    return String(s).replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

const ICONS = { clock: 'fa-clock', sheet: 'fa-scroll', check: 'fa-dice', edit: 'fa-pen' };

/** One badge as HTML (every text escaped; SillyTavern's sanitizer runs after it and prefixes our classes with
 * `custom-`). A clock's badge holds a small pie of its fill; a check's, its dice. */
export function badgeHtml(r) {
    const d = describe(r);
    const icon = `<i class="fa-solid ${ICONS[d.kind] ?? 'fa-tag'}"></i>`;
    let extra = '';
    if (d.kind === 'clock' && d.result === 'ok' && /^\d+\/\d+$/.test(r.attrs.now ?? '')) {
        const [fill, size] = r.attrs.now.split('/').map(Number);
        const pct = size > 0 ? Math.round(100 * fill / size) : 0;
        extra = `<span class="te-pie" style="--te-fill: ${pct}%"></span>`;
    }
    if (d.kind === 'check' && typeof r.attrs.rolled === 'string') {
        extra = r.attrs.rolled.split(',').map(f => `<span class="te-die">${escaped(f.trim())}</span>`).join('');
    }
    const outcome = d.kind === 'check' && r.attrs.outcome ? ` te-${escaped(r.attrs.outcome)}` : '';
    return `<span class="te-badge te-${d.kind} te-${escaped(d.result)}${outcome}" title="${escaped(d.detail)}">`
        + `${icon}${extra}<span class="te-text">${escaped(d.text)}</span></span>`;
}

/**
 * The message formatter's two hooks. Before SillyTavern's regex scripts, each receipt is set aside and a
 * placeholder put in its place (so a regex script that hides tags, markdown and the quote styling never see
 * it); after markdown, each placeholder becomes its badge. Both run inside one synchronous formatting of one
 * message, so the receipts set aside are those of the message the second hook sees.
 */
export function formatterHooks(enabled) {
    let held = [];
    const before = (text, ctx) => {
        held = [];
        if (!enabled() || ctx?.isUser || ctx?.isReasoning || typeof text !== 'string' || !text.includes('[')) {
            return text;
        }
        const found = receiptsIn(text);
        if (!found.length) return text;
        let out = '';
        let pos = 0;
        for (const r of found) {
            out += text.slice(pos, r.start) + `${OPEN}${held.length}${CLOSE}`;
            held.push(r);
            pos = r.end;
        }
        return out + text.slice(pos);
    };
    const after = (html) => {
        if (!held.length || typeof html !== 'string') return html;
        const mine = held;
        held = [];
        return html.replace(TOKEN, (_, n) => (mine[Number(n)] ? badgeHtml(mine[Number(n)]) : ''));
    };
    return { before, after };
}
