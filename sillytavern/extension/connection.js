// Where tagengine is and how the page reaches it (decisions STX-2, STX-3), and the chat on screen as
// the messages tagengine reads.
//
// By default the page calls tagengine through SillyTavern's own server: a request to SillyTavern's chat
// completions endpoint with the Custom source and the Custom URL `<tagengine>/tagengine/bridge`, which SillyTavern
// posts to tagengine with the chat's messages and the Custom API key, as it posts a turn. So the panel works
// wherever SillyTavern's page works (a phone, SillyTavern behind HTTPS), with the address and the key SillyTavern
// already has. With an address in the extension's settings, the page calls tagengine directly instead (the server
// then needs `--allow-origin` with SillyTavern's address, and the key in the settings).

/** The campaign marker, exactly as the server reads it (server/turn/request.py MARKER). */
export const MARKER = /\[tagengine:[ \t]*campaign[ \t]*=[ \t]*"([^"\n]*)"[ \t]*\]/g;

/**
 * What SillyTavern's connection says of tagengine: `{root, campaign, why}`. `root` is the server's address
 * without `/v1` and `/c/NAME` (null when the connection is not a Custom endpoint), `campaign` the NAME of a
 * `/c/NAME/v1` URL.
 */
export function customEndpoint(ctx) {
    const s = ctx.chatCompletionSettings ?? {};
    if (ctx.mainApi !== 'openai' || s.chat_completion_source !== 'custom') {
        return { root: null, campaign: null, why: 'SillyTavern is not connected to a Custom (OpenAI-compatible) endpoint' };
    }
    let url = String(s.custom_url ?? '').trim().replace(/\/+$/, '');
    if (!url) {
        return { root: null, campaign: null, why: 'the Custom endpoint has no URL' };
    }
    url = url.replace(/\/v1$/, '');
    let campaign = null;
    const named = url.match(/\/c\/([^/]+)$/);
    if (named) {
        campaign = decodeURIComponent(named[1]);
        url = url.slice(0, named.index);
    }
    return { root: url, campaign, why: null };
}

/** The settings' direct address, without a trailing slash; '' when the bridge is used. */
export function directAddress(settings) {
    return String(settings.address ?? '').trim().replace(/\/+$/, '');
}

let promptRegex = null; // SillyTavern's regex engine (loaded by `loadPromptRegex`): the prompt's regex scripts

/** SillyTavern's own regex engine, the module its page already loaded (the same URL, so the same module). */
export async function loadPromptRegex() {
    try {
        const base = new URL(import.meta.url).pathname.split('/scripts/extensions/')[0];
        promptRegex = await import(`${base}/scripts/extensions/regex/engine.js`);
    } catch (e) {
        console.warn('tagengine: SillyTavern\'s regex engine cannot be loaded; the prompt\'s regex scripts are not applied', e);
        promptRegex = null;
    }
}

const NAMES = { DEFAULT: 0, CONTENT: 2 }; // SillyTavern's character_names_behavior (public/scripts/openai.js)

/**
 * A message's text as SillyTavern puts it in a Chat Completion prompt (public/script.js `Generate`,
 * public/scripts/openai.js `populateChatHistory`): the prompt's regex scripts run on it, a name goes before it
 * where the "Character Names Behavior" setting puts one, and carriage returns are removed. tagengine keys a chat's
 * state by its replies' text, so the panel must send the text a turn sends.
 */
export function promptText(ctx, m, depth) {
    let text = m.mes;
    if (promptRegex?.getRegexedString) {
        const where = m.is_user ? promptRegex.regex_placement.USER_INPUT : promptRegex.regex_placement.AI_OUTPUT;
        text = promptRegex.getRegexedString(text, where, { isPrompt: true, depth });
    }
    const names = Number(ctx.chatCompletionSettings?.names_behavior ?? NAMES.DEFAULT);
    const other = m.name !== ctx.name1;
    if (names === NAMES.CONTENT || (names === NAMES.DEFAULT && ((ctx.groupId && other) || (m.force_avatar && other)))) {
        text = `${m.name}: ${text}`;
    }
    return String(text).replace(/\r/g, '');
}

/**
 * The chat as tagengine reads it: each message SillyTavern sends in a prompt (not the hidden ones), the selected
 * swipe's text as the prompt has it, and the Author's Note as SillyTavern places it (a system message at its
 * depth), so a campaign marker there counts as it does in a turn. `ids[i]` is the chat index of `messages[i]`
 * (-1 for the note); `stored[i]` says whether `messages[i]` is the stored message's own text.
 */
export function chatMessages(ctx, noteText) {
    const shown = (ctx.chat ?? []).map((m, i) => [m, i]).filter(([m]) => m && !m.is_system && typeof m.mes === 'string');
    const messages = [];
    const ids = [];
    const stored = [];
    shown.forEach(([m, i], n) => {
        const content = promptText(ctx, m, shown.length - n - 1);
        messages.push({ role: m.is_user ? 'user' : 'assistant', content });
        ids.push(i);
        stored.push(content === m.mes.replace(/\r/g, ''));
    });
    const meta = ctx.chatMetadata ?? {};
    const note = noteText ?? meta.note_prompt;
    if (typeof note === 'string' && note.trim() && Number(meta.note_interval ?? 1) !== 0) {
        const depth = Number(meta.note_depth ?? 4);
        const inChat = Number(meta.note_position ?? 1) === 1;
        const at = inChat ? Math.max(0, messages.length - depth) : 0;
        messages.splice(at, 0, { role: 'system', content: note.replace(/\r/g, '') });
        ids.splice(at, 0, -1);
        stored.splice(at, 0, false);
    }
    return { messages, ids, stored };
}

/** A path of the JSON API, its one scheme: `/tagengine/api/<rest>`, a campaign's under
 * `/tagengine/api/c/<campaign>/<rest>` (`rest` without its leading slash; a campaign's name is encoded). */
export function apiPath(rest, campaign = null) {
    const at = campaign === null || campaign === undefined ? '/tagengine/api' : `/tagengine/api/c/${encodeURIComponent(campaign)}`;
    return rest ? `${at}/${rest}` : at;
}

/** The chat on screen's id, which the server keeps its edits apart by (ED-25): two new chats from one card hold
 * the same greeting, so their messages alone cannot tell them apart. Percent-encoded, since it goes in a header
 * (SillyTavern's chat ids hold the character's name, which a header cannot carry as it is), and at most 256
 * characters (a longer one ends with a hash of the whole). Null when no chat is open. */
export function chatId(ctx) {
    const id = ctx.chatId;
    if (id === undefined || id === null || id === '') return null;
    const text = encodeURIComponent(String(id));
    if (text.length <= 256) return text;
    let h = 5381;
    for (const ch of text) h = ((h * 33) ^ ch.charCodeAt(0)) >>> 0;
    return `${text.slice(0, 240)}~${h.toString(16)}`;
}

/** An error the panel shows as it is: `message` is for people. */
export class Unreachable extends Error {}

/**
 * One call of tagengine's JSON API: `{status, body}`. `withMessages`: the chat's messages go in the body's
 * `messages`. Throws `Unreachable` when tagengine cannot be reached at all.
 */
export async function callTagengine(ctx, settings, { method = 'GET', path, body = {}, messages = null }) {
    const chat = chatId(ctx);
    if (messages && chat !== null) body = { ...body, chat };  // the chat's edits are its own (ED-25)
    const direct = directAddress(settings);
    if (direct) {
        const headers = { 'Content-Type': 'application/json' };
        if (settings.key) headers.Authorization = `Bearer ${settings.key}`;
        let got;
        try {
            got = await fetch(direct + path, {
                method, headers, body: method === 'GET' ? undefined : JSON.stringify(messages ? { ...body, messages } : body),
            });
        } catch (e) {
            throw new Unreachable(`tagengine at ${direct} cannot be reached from this browser (is the server running, `
                + `with --allow-origin ${location.origin}?): ${e.message}`);
        }
        return { status: got.status, body: await got.json().catch(() => ({ error: { message: `status ${got.status}` } })) };
    }
    const endpoint = customEndpoint(ctx);
    if (!endpoint.root) {
        throw new Unreachable(`${endpoint.why}: connect it to tagengine (API Connections), or give tagengine's address in `
            + 'the extension\'s settings');
    }
    const got = await fetch('/api/backends/chat-completions/generate', {
        method: 'POST',
        headers: ctx.getRequestHeaders(),
        body: JSON.stringify({
            chat_completion_source: 'custom',
            custom_url: `${endpoint.root}/tagengine/bridge`,
            custom_include_body: JSON.stringify({ tagengine: { method, path, body, messages: !!messages } }),
            custom_include_headers: '',
            custom_exclude_body: '',
            custom_prompt_post_processing: '',
            model: 'tagengine',
            stream: false,
            messages: messages ?? [],
        }),
    });
    const doc = await got.json().catch(() => null);
    if (doc && doc.tagengine && typeof doc.tagengine.status === 'number') {
        return doc.tagengine;
    }
    const said = doc?.error?.message ?? `status ${got.status}`;
    throw new Unreachable(`SillyTavern could not reach tagengine at ${endpoint.root} (its Custom URL): ${said}`);
}
