// tagengine inside SillyTavern (docs/sillytavern.md, decisions STX-1..STX-13): the game of the chat on
// screen in a panel, receipts as badges in the messages, the chat's campaign and a picker for it, a check's
// dice card, and the hand edits of the game sheet. SillyTavern loads this module (manifest.json's `js`) and calls
// `init` (its `activate` hook).
//
// The panel asks tagengine for the state after the chat's own messages, the swipe selected, whenever they change
// (a reply received, a swipe, an edit, a delete, another chat); tagengine replays the chat as a turn would and
// moves nothing. The chat needs none of this to play: without the extension, the server plays it the same.

import { MARKER, Unreachable, apiPath, callTagengine, chatId, chatMessages, customEndpoint, loadPromptRegex } from './connection.js';
import { Panel, el } from './panel.js';
import { formatterHooks, setWords } from './receipts.js';

const KEY = 'tagengine';
const DEFAULTS = { badges: true, open: false, address: '', key: '' };
const QUIET_DELAY = 120; // ms: a burst of events (a delete then a render) is one refresh

let panel = null;
let asked = 0; // the newest refresh; an older answer is dropped
let timer = null;
let lastCampaign = null; // the campaign the last state request played
let rewriteFrom = null; // the first chat message edited since the last refresh
let wordsOf = undefined; // the chat whose campaign's words the badges use (asked once a chat, the panel closed too)

function ctx() {
    return SillyTavern.getContext(); // a new object each call: chatMetadata is replaced on every chat load
}

/** The extension's settings: always the same object (the settings block's inputs write into it), with a
 * default for each value not kept yet. */
function settings() {
    const all = ctx().extensionSettings;
    const s = (all[KEY] ??= {});
    for (const [k, v] of Object.entries(DEFAULTS)) {
        if (!(k in s)) s[k] = v;
    }
    return s;
}

function noteText() {
    const area = document.getElementById('extension_floating_prompt');
    // the textarea is what a request sends (SillyTavern reads it at each generation)
    return area instanceof HTMLTextAreaElement ? area.value : ctx().chatMetadata?.note_prompt;
}

async function call(request) {
    return callTagengine(ctx(), settings(), request);
}

/** The state of the chat on screen, drawn in the panel; `edited`: the chat index of the first message edited
 * (then the replies from there are written again where their receipts changed, the panel open or not). */
async function refresh(edited = null) {
    if (!panel || (!settings().open && edited === null && wordsOf === ctx().chatId)) return;
    const mine = ++asked;
    const c = ctx();
    if (c.chatId === undefined || c.chatId === null) {
        if (settings().open) panel.show(null, 'Open a chat: the game sheet shows the game of the chat on screen.', null, 'info');
        return;
    }
    const { messages, ids, stored } = chatMessages(c, noteText());
    const endpoint = customEndpoint(c);
    const path = apiPath('state', endpoint.campaign || null);
    const body = {};
    if (edited !== null) {
        const at = ids.findIndex(id => id >= edited);
        if (at >= 0) body.rewrite_from = at;
    }
    let got;
    try {
        got = await call({ method: 'POST', path, body, messages });
    } catch (e) {
        if (mine === asked && settings().open) panel.show(null, e instanceof Unreachable ? e.message : `tagengine: ${e}`);
        return;
    }
    if (mine !== asked) return;
    lastCampaign = got.body?.campaign?.name ?? null;
    wordsOf = c.chatId;
    if (setWords(got.body?.sheet?.words)) redrawMessages(); // the badges say the ruleset's words
    // a reply is written again only where the chat holds the very text sent (no prompt regex script, no name
    // put before it): else the stored message would get the prompt's form
    const rewrites = (got.status === 200 && Array.isArray(got.body?.rewrites) ? got.body.rewrites : [])
        .filter(r => stored[r.index]);
    if (rewrites.length) {
        await rewrite(rewrites, ids);
        return refresh();
    }
    if (settings().open) {
        fitAboveSendForm();
        panel.show(got, null, c.chatId);
    }
}

/** An edited reply, and the replies after it, written again as a replay writes them (STX-7): their receipts
 * follow the edit, so the chat replays as it reads and the server's later turns find it as they left it. */
async function rewrite(rewrites, ids) {
    const c = ctx();
    for (const { index, text } of rewrites) {
        const id = ids[index];
        const m = c.chat[id];
        if (!m || typeof text !== 'string') continue;
        m.mes = text;
        if (Array.isArray(m.swipes) && Number.isInteger(m.swipe_id) && m.swipe_id < m.swipes.length) {
            m.swipes[m.swipe_id] = text;
        }
        c.updateMessageBlock(id, m);
    }
    await c.saveChat();
}

function soon(edited = null) {
    if (edited !== null) rewriteFrom = rewriteFrom === null ? edited : Math.min(rewriteFrom, edited);
    clearTimeout(timer);
    timer = setTimeout(() => {
        const from = rewriteFrom;
        rewriteFrom = null;
        refresh(from);
    }, QUIET_DELAY);
}

function campaignPath(rest) {
    return apiPath(rest, lastCampaign ?? '');
}

/** The messages of the chat on screen, as the server reads them (STX-5). */
const onScreen = () => chatMessages(ctx(), noteText()).messages;
/** A call that could not be made, as an answer the panel shows. */
const asAnswer = e => ({ status: 0, body: { error: { message: e.message } } });

const actions = {
    refresh: () => refresh(),
    close: () => setOpen(false),
    async edit(who, changes) {
        const got = await call({ method: 'POST', path: campaignPath(`characters/${encodeURIComponent(who)}`),
            body: { changes }, messages: onScreen() });
        if (got.status !== 200) {
            const problems = (got.body?.problems ?? []).map(p => p.message).join('; ');
            panel.say(`${who}: ${problems || got.body?.error?.message || `refused (${got.status})`}`, 'error');
            return got;
        }
        await refresh();
        return got;
    },
    async sheetForm(who) {
        return call({ method: 'POST', path: campaignPath(`read/characters/${encodeURIComponent(who)}`), body: {},
            messages: onScreen() });
    },
    async saveSheet(who, changes) {
        const got = await call({ method: 'POST', path: campaignPath(`characters/${encodeURIComponent(who)}`),
            body: { changes }, messages: onScreen() }).catch(asAnswer);
        if (got.status === 200) await refresh();
        return got;
    },
    async rulesets() {
        return call({ method: 'GET', path: apiPath('rulesets') }).catch(asAnswer);
    },
    async start(campaign) {
        return call({ method: 'POST', path: apiPath('campaigns'), body: campaign }).catch(asAnswer);
    },
    async partyForm() {
        return call({ method: 'POST', path: campaignPath('read/party'), body: {},
            messages: onScreen() });
    },
    async saveParty(changes, revision) {
        const got = await call({ method: 'POST', path: campaignPath('party'), body: { changes, revision },
            messages: onScreen() });
        if (got.status === 200) await refresh();
        return got;
    },
    async roll(check) {
        return call({ method: 'POST', path: apiPath('checks'), body: { campaign: lastCampaign ?? undefined, check },
            messages: onScreen() }).catch(asAnswer);
    },
    async campaigns() {
        return call({ method: 'GET', path: apiPath('campaigns') }).catch(asAnswer);
    },
    toMessage(receipt) {
        const area = document.getElementById('send_textarea');
        if (area instanceof HTMLTextAreaElement) {
            area.value = area.value ? `${area.value} ${receipt}` : receipt;
            area.dispatchEvent(new Event('input', { bubbles: true }));
        }
    },
    /** The campaign marker written into this chat's Author's Note (replacing one there), through its textarea,
     * so the very next request carries it (SillyTavern reads the textarea at each generation). */
    async pick(name) {
        const area = document.getElementById('extension_floating_prompt');
        if (!(area instanceof HTMLTextAreaElement) || ctx().chatId === undefined) {
            panel.say('Open a chat first: the campaign is written into its Author\'s Note.', 'error');
            return;
        }
        const marker = `[tagengine: campaign="${name}"]`;
        const text = area.value;
        const next = MARKER.test(text) ? text.replace(MARKER, marker) : (text.trim() ? `${text.replace(/\s+$/, '')}\n${marker}` : marker);
        MARKER.lastIndex = 0;
        $(area).val(next).trigger('input');
        const interval = document.getElementById('extension_floating_interval');
        if (interval instanceof HTMLInputElement && Number(interval.value) === 0) {
            $(interval).val(1).trigger('input'); // a note sent every 0 messages is never sent
        }
        await refresh();
    },
};

function setOpen(open) {
    settings().open = open;
    ctx().saveSettingsDebounced();
    document.getElementById('tagengine_panel')?.classList.toggle('te-open', open);
    document.getElementById('tagengine_toggle')?.classList.toggle('te-active', open);
    fitAboveSendForm();
    if (open) refresh();
}

/** Every message on screen formatted again: badges turned on or off show at once, without reopening the chat. */
function redrawMessages() {
    const c = ctx();
    for (const node of document.querySelectorAll('#chat .mes[mesid]')) {
        const id = Number(node.getAttribute('mesid'));
        if (c.chat[id] && !c.chat[id].is_user) c.updateMessageBlock(id, c.chat[id]);
    }
}

/** `X-Tagengine-Type` and `X-Tagengine-Chat` on each request to the Custom endpoint: the server then knows Test
 * Message, Impersonate and other extensions' prompts for what they are, whatever their texts (TR-5), and which
 * chat a turn belongs to, so an edit made in one new chat is not met in another from the same card (ED-25); with
 * nothing to set by hand. */
function typeHeader(data) {
    if (data?.chat_completion_source !== 'custom') return;
    let headers = String(data.custom_include_headers ?? '');
    const list = /^\s*-/.test(headers);
    const add = (name, value) => {
        if (new RegExp(name, 'i').test(headers)) return;
        headers = `${headers}${headers.trim() ? '\n' : ''}${list ? '- ' : ''}${name}: ${JSON.stringify(value)}`;
    };
    add('X-Tagengine-Type', String(data.type ?? 'normal'));
    const chat = chatId(ctx());
    if (chat !== null) add('X-Tagengine-Chat', chat);
    data.custom_include_headers = headers;
}

function settingsBlock() {
    const s = settings();
    const badges = el('input', { type: 'checkbox', id: 'tagengine_badges', checked: s.badges });
    badges.addEventListener('change', () => { s.badges = badges.checked; ctx().saveSettingsDebounced(); redrawMessages(); });
    const address = el('input', { type: 'text', class: 'text_pole', id: 'tagengine_address', value: s.address,
        placeholder: 'blank: through SillyTavern (its Custom URL)' });
    address.addEventListener('change', () => { s.address = address.value.trim(); ctx().saveSettingsDebounced(); refresh(); });
    const key = el('input', { type: 'password', class: 'text_pole', id: 'tagengine_key', value: s.key, autocomplete: 'off' });
    key.addEventListener('change', () => { s.key = key.value; ctx().saveSettingsDebounced(); refresh(); });
    // each line its own block: the drawer is a narrow column, where inline pieces ran into each other
    return el('div', { class: 'tagengine-settings' },
        el('div', { class: 'inline-drawer' },
            el('div', { class: 'inline-drawer-toggle inline-drawer-header' }, el('b', { text: 'tagengine' }),
                el('div', { class: 'inline-drawer-icon fa-solid fa-circle-chevron-down down' })),
            el('div', { class: 'inline-drawer-content' },
                el('button', { class: 'menu_button te-open-sheet', onclick: () => setOpen(true) }, 'Open the game sheet'),
                el('label', { class: 'checkbox_label', for: 'tagengine_badges' }, badges, el('span', { text: 'Receipts as badges in the messages' })),
                el('label', { class: 'te-setting', for: 'tagengine_address', text: 'tagengine\'s address for this browser (optional)' }), address,
                el('div', { class: 'te-setting te-hint', text: 'Blank: the panel reaches tagengine through SillyTavern, at its Custom URL, with its key. '
                    + 'An address (http://127.0.0.1:5005): directly, for a server started with --allow-origin and this page\'s address.' }),
                el('label', { class: 'te-setting', for: 'tagengine_key', text: 'Its --api-key, for a direct address' }), key)));
}

/** The panel's bottom kept above SillyTavern's send form, whatever its height (on a phone it is taller than its
 * one row of icons, and grows as a message is typed): the message box and the d20 stay reachable with the panel
 * open. `--te-below` is the height from the form's top to the window's bottom, measured again whenever the panel
 * is drawn or opened, the window resized or the form's size changed; a form not laid out (hidden, or not yet
 * placed: at most half the window) leaves SillyTavern's own measure in place. */
function fitAboveSendForm() {
    const root = document.getElementById('tagengine_panel');
    const form = document.getElementById('send_form');
    if (!root || !form) return;
    const box = form.getBoundingClientRect();
    const below = window.innerHeight - box.top;
    if (box.height > 0 && below > 0 && below <= window.innerHeight / 2) root.style.setProperty('--te-below', `${below}px`);
    else root.style.removeProperty('--te-below');
}

function keepAboveSendForm() {
    fitAboveSendForm();
    window.addEventListener('resize', fitAboveSendForm);
    const form = document.getElementById('send_form');
    if (form && window.ResizeObserver) new ResizeObserver(fitAboveSendForm).observe(form);
}

export async function init() {
    await loadPromptRegex();
    const c = ctx();
    const s = settings();
    const hooks = formatterHooks(() => settings().badges);
    c.messageFormatter.addHook(hooks.before, { stage: c.messageFormatter.stage.BEFORE_REGEX, order: c.messageFormatter.order.EARLIEST });
    c.messageFormatter.addHook(hooks.after, { stage: c.messageFormatter.stage.AFTER_MARKDOWN, order: c.messageFormatter.order.EARLIEST });

    const root = el('div', { id: 'tagengine_panel', class: 'te-panel', role: 'complementary', 'aria-label': 'Game sheet' });
    (document.getElementById('movingDivs') ?? document.body).append(root);
    panel = new Panel(root, actions);
    document.getElementById('extensions_settings2')?.append(settingsBlock());
    const toggle = el('div', { id: 'tagengine_toggle', class: 'fa-solid fa-dice-d20 interactable', title: 'Game sheet (tagengine)',
        tabindex: '0', role: 'button', 'aria-label': 'Game sheet', onclick: () => setOpen(!settings().open) });
    document.getElementById('leftSendForm')?.append(toggle);
    document.getElementById('extensionsMenu')?.append(el('div', { id: 'tagengine_wand', class: 'list-group-item flex-container flexGap5',
        onclick: () => setOpen(true) }, el('div', { class: 'fa-solid fa-dice-d20 extensionsMenuExtensionButton' }), el('span', { text: 'Game sheet' })));

    const { eventSource, eventTypes } = c;
    for (const name of ['MESSAGE_RECEIVED', 'MESSAGE_SWIPED', 'MESSAGE_SWIPE_DELETED', 'MESSAGE_DELETED',
        'CHAT_CHANGED', 'GENERATION_ENDED']) {
        eventSource.on(eventTypes[name], () => soon());
    }
    eventSource.on(eventTypes.MESSAGE_EDITED, (id) => soon(Number(id)));
    eventSource.on(eventTypes.CHAT_COMPLETION_SETTINGS_READY, typeHeader);
    // the Author's Note typed by hand may name another campaign (or a misspelled one): said as it is typed.
    // jQuery's delegated handler sees SillyTavern's own `.trigger('input')` too, which a DOM listener does not.
    $(document).on('input', '#extension_floating_prompt', () => soon());
    keepAboveSendForm();
    root.classList.toggle('te-open', s.open);
    toggle.classList.toggle('te-active', s.open);
    redrawMessages();
    if (s.open) soon();
}
