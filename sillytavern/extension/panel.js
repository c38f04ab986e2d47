// The panel: the game sheet of the chat on screen. Drawn from the state endpoint's
// answer, the game sheet page's plain values (characters, party, clocks as SVG wedges, the last receipts) with
// each live value's control. Every text is set as text; nothing from the server or the chat becomes markup.
//
// The panel never computes game state: a click posts an edit (or a check) and the panel draws the answer of
// the next state request. Each answer draws the panel anew, but what the player has in hand is carried into each
// new drawing: an open party form, as typed, until its Save or Cancel (STX-12); a check's dice card and the
// roller's choices, and a campaign picker with its selection, while the same chat and campaign are drawn (STX-13);
// a character's sheet form, as typed, until its Save or Cancel, and the form that starts a campaign (STX-14).
//
// Every word the panel shows of the game is the ruleset's (its labels, its party sheet's name) and the campaign's
// (its characters in the order they were named); every control is at least 44 px tall at a phone's width.

import { attributesOf, describe, receiptsIn } from './receipts.js';

const SVG = 'http://www.w3.org/2000/svg';

/** An element with attributes (`on*` as listeners, `text` as its text) and children (strings become text). */
export function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === 'text') node.textContent = String(v);
        else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
        else node.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) {
        if (c === null || c === undefined || c === false) continue;
        node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
}

// how the campaign was chosen, said inside the campaign line's parentheses (so without any of their own)
const BY = {
    marker: 'named by this chat\'s Author\'s Note',
    url: 'named by the connection\'s Custom URL, /c/NAME/v1',
    default: 'the server\'s default campaign, --campaign',
    asked: 'asked for by the panel',
};

/** The campaign line: which campaign the chat plays and how it was chosen, said plainly. */
export function campaignWords(doc) {
    const c = doc?.campaign;
    if (!c || !c.name) {
        return 'This chat plays no campaign: its requests go to the model unchanged. Start one, or pick one below.';
    }
    const how = BY[c.by] ?? c.by;
    if (doc.error) {
        return `This chat names the campaign "${c.name}" (${how}), and the server has no campaign of that name.`;
    }
    return `Campaign "${c.name}" (${how}) \u00b7 ${c.ruleset ?? ''} \u00b7 ${doc.turn ? `turn ${doc.turn}` : 'before the first turn'}`;
}

function clockFigure(c) {
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('viewBox', '0 0 100 100');
    svg.setAttribute('class', 'te-clock-face');
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', `${c.name}: ${c.filled} of ${c.size}`);
    for (const s of c.segments) {
        const part = s.path ? document.createElementNS(SVG, 'path') : document.createElementNS(SVG, 'circle');
        if (s.path) part.setAttribute('d', s.path);
        else { part.setAttribute('cx', '50'); part.setAttribute('cy', '50'); part.setAttribute('r', String(c.r)); }
        part.setAttribute('class', s.filled ? 'te-seg te-filled' : 'te-seg');
        svg.append(part);
    }
    return el('figure', { class: `te-clock${c.complete ? ' te-complete' : ''}` }, svg,
        el('figcaption', {}, el('span', { class: 'te-clock-name', text: c.name }), ` ${c.filled}/${c.size}`));
}

function bar(label, cur, max, pct) {
    return el('div', { class: 'te-pool' },
        el('span', { class: 'te-label', text: label }),
        el('span', { class: 'te-bar' }, el('span', { class: 'te-fill', style: `width: ${Number(pct) || 0}%` })),
        el('span', { class: 'te-now', text: max === null || max === undefined ? String(cur) : `${cur}/${max}` }));
}

export class Panel {
    /**
     * @param {HTMLElement} root the panel's element
     * @param {object} actions `{edit(who, changes), sheetForm(who), saveSheet(who, changes), partyForm(),
     *   saveParty(changes, revision), roll(check), campaigns(), rulesets(), start(campaign), pick(name), refresh(),
     *   close()}`, each async
     */
    constructor(root, actions) {
        this.root = root;
        this.actions = actions;
        this.doc = null;
        this.place = null; // the chat and campaign drawn last
        this.partyOpen = null; // the open party form: {place, revision, holder}, kept through redraws (STX-12)
        this.sheetOpen = null; // a character's open sheet form: {place, who, holder}, kept the same way (STX-14)
        this.sheetWanted = null; // {campaign, who}: the sheet to open once a campaign just started is drawn
        // kept through redraws of the same chat and campaign (STX-13): the roller last drawn and its choices {place,
        // details, who, what, target}; the dice card shown {place, card}, until Dismiss or the next roll; the campaign
        // picker {place, holder}, open with its selection until Write or Close (holder null: closed by the player there)
        this.roller = null;
        this.rolled = null;
        this.picking = null;
    }

    /** A line in the panel's status area (`kind`: info, warning, error). */
    say(text, kind = 'info') {
        const status = this.root.querySelector('.te-status');
        if (status) status.replaceChildren(el('div', { class: `te-say te-${kind}`, text }));
    }

    /** Draw a state answer (the state endpoint's `{status, body}`) of the chat `chat` (its id), or a line
     * before any answer (`kind`: an error, or info such as "open a chat"). What the player has in hand in the same chat and campaign is drawn again as they left it
     * (an open party form, a dice card, the roller's choices, an open picker), with the scroll and the focus. */
    show(answer, error = null, chat = null, kind = 'error') {
        this.doc = answer ? { ...answer.body, error: answer.status >= 400 ? answer.body?.error : null } : null;
        this.place = JSON.stringify([chat, this.doc?.campaign?.name ?? null]);
        if (!error) { // another chat or campaign drawn: the dice card, the roller and the picker were the other's
            if (this.roller?.place !== this.place) this.roller = null;
            if (this.rolled?.place !== this.place) this.rolled = null;
            if (this.picking?.place !== this.place) this.picking = null;
        }
        const top = this.root.scrollTop;
        const active = document.activeElement;
        const typing = active !== this.root && this.root.contains(active) ? { node: active,
            keep: active.getAttribute('data-keep'), start: active.selectionStart, end: active.selectionEnd } : null;
        this.draw(this.doc, error, kind);
        this.root.scrollTop = top;
        // the very element where it was kept (a party form, a picker), else its new drawing (the roller's controls)
        const again = typing?.node.isConnected ? typing.node
            : typing?.keep ? this.root.querySelector(`[data-keep="${typing.keep}"]`) : null;
        if (again) {
            again.focus({ preventScroll: true });
            if (typeof typing.start === 'number') again.setSelectionRange(typing.start, typing.end);
        }
    }

    draw(doc, error, kind = 'error') {
        const head = el('div', { class: 'te-head' },
            el('b', { text: 'Game sheet' }),
            el('span', { class: 'te-grow' }),
            el('button', { class: 'menu_button te-small', title: 'Refresh', 'aria-label': 'Refresh the game sheet',
                onclick: () => this.actions.refresh() }, el('i', { class: 'fa-solid fa-rotate' })),
            el('button', { class: 'menu_button te-small', title: 'Close', 'aria-label': 'Close the game sheet',
                onclick: () => this.actions.close() }, el('i', { class: 'fa-solid fa-xmark' })));
        const campaign = el('div', { class: 'te-campaign' },
            el('span', { class: 'te-campaign-words', text: error ? '' : campaignWords(doc) }),
            el('span', { class: 'te-buttons' },
                el('button', { class: 'menu_button te-small te-start', onclick: () => this.openStarter() }, 'Start a campaign\u2026'),
                el('button', { class: 'menu_button te-small te-pick', onclick: () => this.openPicker() }, 'Campaign\u2026')));
        const picker = this.picking?.place === this.place && this.picking.holder
            ? this.picking.holder : el('div', { class: 'te-picker' });
        const parts = [head, campaign, picker, el('div', { class: 'te-status' })];
        const body = el('div', { class: 'te-body' });
        parts.push(body);
        this.root.replaceChildren(...parts);
        if (error) {
            this.say(error, kind);
            return;
        }
        if (doc?.error) {
            this.say(doc.error.message, 'error');
            if (!this.picking) this.openPicker();
            return;
        }
        const notes = [];
        if (doc?.campaign?.warning) notes.push(el('div', { class: 'te-say te-warning', text: doc.campaign.warning }));
        for (const h of doc?.history ?? []) notes.push(el('div', { class: 'te-say te-warning', text: `History: ${h}` }));
        const waiting = doc?.at?.waiting ?? 0;
        if (waiting) {
            notes.push(el('div', { class: 'te-say te-waiting',
                text: `${waiting} edit${waiting === 1 ? '' : 's'} wait${waiting === 1 ? 's' : ''} for the next reply` }));
        }
        this.root.querySelector('.te-status').replaceChildren(...notes);
        if (!doc?.sheet) {
            if (!doc?.campaign?.name && !this.picking) this.openPicker();
            return;
        }
        const s = doc.sheet;
        if (s.clocks_enabled) {
            body.append(el('section', { class: 'te-clocks' }, el('h4', { text: 'Clocks' }),
                s.clocks.length ? el('div', { class: 'te-clock-row' }, s.clocks.map(clockFigure))
                    : el('div', { class: 'te-none', text: 'No clock is running.' })));
        }
        for (const c of s.characters) body.append(this.character(c));
        const wanted = this.sheetWanted;
        if (wanted && wanted.campaign === doc.campaign?.name) {
            this.sheetWanted = null;
            const holder = body.querySelector(`article[data-who="${CSS.escape(wanted.who)}"] .te-sheet-form`);
            if (holder && !this.sheetOpen) this.openSheet(wanted.who, holder);
        }
        if (s.party) body.append(this.party(s.party));
        body.append(this.receipts(s.receipts ?? []));
        body.append(this.checkRoller(s));
    }

    character(c) {
        const who = c.name;
        const edit = (changes) => this.actions.edit(who, changes);
        const parts = [el('h3', { class: 'te-who', text: who })];
        for (const p of c.pools) {
            parts.push(this.poolRow(p, edit));
        }
        for (const t of c.tracks) parts.push(bar(t.label, t.value, t.max, t.pct));
        for (const w of c.wounds) parts.push(this.woundTrack(w, edit));
        for (const st of c.states) {
            parts.push(el('div', { class: 'te-row' }, el('span', { class: 'te-label', text: st.label }),
                el('span', { class: 'te-chips', role: 'group', 'aria-label': st.label }, st.choices.map(ch =>
                    el('button', { class: `te-chip${ch.on ? ' te-on' : ''}`, 'aria-pressed': ch.on ? 'true' : 'false',
                        'aria-label': `${st.label}: ${ch.label}`,
                        onclick: () => (ch.on ? null : edit({ [st.path]: ch.value })) }, ch.label)))));
        }
        if (c.conditions.length) {
            parts.push(el('div', { class: 'te-row' }, el('span', { class: 'te-label', text: 'Conditions' }),
                el('span', { class: 'te-chips' }, c.conditions.map(k =>
                    el('button', { class: `te-chip${k.on ? ' te-on' : ''}`, 'aria-pressed': k.on ? 'true' : 'false',
                        onclick: () => edit({ [k.path]: !k.on }) }, k.label)))));
        }
        for (const n of c.text) {
            parts.push(el('div', { class: 'te-row' }, el('span', { class: 'te-label', text: n.label }),
                el('span', { class: 'te-value', text: n.value || '\u2014' })));
        }
        // the sheet's form in the panel, open through redraws until its Save or Cancel (STX-14)
        const open = this.sheetOpen?.place === this.place && this.sheetOpen.who === who ? this.sheetOpen : null;
        const holder = open ? open.holder : el('div', { class: 'te-sheet-form' });
        parts.push(el('button', { class: 'menu_button te-small te-edit-sheet', disabled: open !== null,
            'aria-label': `Edit ${who}'s sheet`, onclick: () => this.openSheet(who, holder) }, 'Edit the sheet'), holder);
        const details = el('details', { class: 'te-details' }, el('summary', { text: 'Sheet' }));
        for (const f of c.fields) {
            details.append(el('div', { class: 'te-row' }, el('span', { class: 'te-label', text: f.label }),
                el('span', { class: 'te-value', text: f.value })));
        }
        for (const d of c.derived) {
            details.append(el('div', { class: 'te-row' }, el('span', { class: 'te-label', text: d.label }),
                el('span', { class: 'te-value', text: d.value })));
        }
        for (const g of c.checks) {
            details.append(el('div', { class: 'te-row' }, el('span', { class: 'te-label', text: g.title }),
                el('span', { class: 'te-value', text: g.rows.map(r => `${r.label} ${r.number}`).join(' \u00b7 ') })));
        }
        parts.push(details);
        return el('article', { class: 'te-sheet', 'data-who': who }, parts);
    }

    poolRow(p, edit) {
        const row = bar(p.label, p.cur, p.max, p.pct);
        if (p.ctl) {
            const input = el('input', { type: 'number', class: 'text_pole te-num', value: p.cur, min: p.ctl.min ?? 0,
                max: p.ctl.max ?? undefined, 'aria-label': `${p.label}: set to` });
            row.append(el('span', { class: 'te-set' }, input,
                el('button', { class: 'menu_button te-small', onclick: () => edit({ [p.ctl.path]: input.value }) }, 'Set')));
        }
        return row;
    }

    woundTrack(w, edit) {
        const ctl = w.ctl;
        const kinds = ctl?.kinds ?? [];
        const pick = kinds.length > 1 ? el('select', { class: 'text_pole te-kind', 'aria-label': `${w.label}: kind to mark` },
            kinds.map(k => el('option', { value: k.id, selected: k.chosen }, k.label))) : null;
        const boxes = (ctl?.boxes ?? []).map(b => el('button', {
            class: `te-box${b.mark ? ' te-marked' : ''}`, 'aria-label': b.aria, title: b.aria,
            onclick: () => edit({ [b.path]: b.action === 'clear' ? '' : (pick?.value ?? kinds[0]?.id ?? '') }),
        }, b.mark ? (b.mark_label ?? b.mark).slice(0, 1).toUpperCase() : ''));
        return el('div', { class: 'te-row te-wound' },
            el('span', { class: 'te-label', text: w.label }),
            el('span', { class: 'te-boxes', role: 'group', 'aria-label': w.label }, boxes),
            pick, el('span', { class: 'te-now', text: w.now }));
    }

    party(p) {
        const parts = [el('h3', { class: 'te-who', text: p.label })];
        for (const f of p.fields) {
            parts.push(el('div', { class: 'te-row' }, el('span', { class: 'te-label', text: f.label }),
                el('span', { class: 'te-value', text: f.value })));
        }
        for (const pool of p.pools) parts.push(bar(pool.label, pool.cur, pool.max, pool.pct));
        // the draft open in this chat and campaign, as typed; Edit waits for its Save or Cancel (one draft at a time)
        const open = this.partyOpen?.place === this.place ? this.partyOpen : null;
        const holder = open ? open.holder : el('div', { class: 'te-party-form' });
        if (open) partyMoved(open, p.revision);
        parts.push(el('button', { class: 'menu_button te-small te-edit-party', disabled: open !== null,
            onclick: () => this.openParty(holder) }, `Edit the ${p.label} sheet`), holder);
        return el('article', { class: 'te-sheet te-party' }, parts);
    }

    async openParty(holder) {
        const open = { place: this.place, revision: null, holder };
        this.partyOpen = open;
        this.editPartyEnabled(false);
        const got = await this.actions.partyForm().catch(e => ({ status: 0, body: { error: { message: e.message } } }));
        if (this.partyOpen !== open) return;
        if (!got || got.status !== 200) {
            this.closeParty(holder);
            holder.replaceChildren(el('div', { class: 'te-say te-error', text: got?.body?.error?.message ?? 'the party sheet cannot be opened' }));
            return;
        }
        if (open.place !== this.place) { // another chat or campaign was drawn meanwhile: this form is not its
            this.closeParty(holder);
            return;
        }
        this.drawPartyForm(holder, got.body.form, got.body.problems ?? [], null);
    }

    /** The party form closed by its Save or Cancel: the draft is dropped, and Edit opens a fresh one. */
    closeParty(holder) {
        holder.replaceChildren();
        if (this.partyOpen?.holder === holder) this.partyOpen = null;
        this.editPartyEnabled(this.partyOpen?.place !== this.place);
    }

    editPartyEnabled(on) {
        const button = this.root.querySelector('.te-edit-party');
        if (button) button.disabled = !on;
    }

    drawPartyForm(holder, form, problems, note) {
        // the revision the draft's save names (PARTY-36): the one it was opened at, or the newer sheet a 409 showed
        if (this.partyOpen?.holder === holder) this.partyOpen.revision = form.revision;
        const inputs = formInputs(form, problems, i => i.path.startsWith('fields.'));
        const save = el('button', { class: 'menu_button', onclick: async () => {
            const changes = {};
            for (const x of holder.querySelectorAll('[data-path]')) {
                if (x.value !== x.getAttribute('data-was')) changes[x.getAttribute('data-path')] = x.value;
            }
            const got = await this.actions.saveParty(changes, form.revision);
            if (this.partyOpen?.holder !== holder) return; // cancelled meanwhile: nothing to show it in
            if (got?.status === 409) {
                this.drawPartyForm(holder, got.body.form, got.body.problems ?? [],
                    'Someone else saved the party sheet first: this is the newer sheet. Save again to write your changes over it.');
                for (const [path, v] of Object.entries(changes)) {
                    const x = holder.querySelector(`[data-path="${CSS.escape(path)}"]`);
                    if (x) x.value = v;
                }
                this.actions.refresh(); // the summary above the form shows the newer sheet too, the form kept
            } else if (got && got.status >= 400) {
                this.drawPartyForm(holder, got.body.form ?? form, got.body.problems ?? [], got.body.error?.message ?? 'refused');
            } else {
                this.closeParty(holder);
            }
        } }, 'Save');
        holder.replaceChildren(...(note ? [el('div', { class: 'te-say te-warning', text: note })] : []), ...inputs,
            el('div', { class: 'te-buttons' }, save, el('button', { class: 'menu_button', onclick: () => this.closeParty(holder) }, 'Cancel')));
    }

    /** A character's sheet form, asked at the chat's point, drawn into `holder` in the panel (STX-14). */
    async openSheet(who, holder) {
        const open = { place: this.place, who, holder };
        this.sheetOpen = open;
        this.root.querySelector(`article[data-who="${CSS.escape(who)}"] .te-edit-sheet`)?.setAttribute('disabled', '');
        const got = await this.actions.sheetForm(who).catch(e => ({ status: 0, body: { error: { message: e.message } } }));
        if (this.sheetOpen !== open) return;
        if (!got || got.status !== 200) {
            this.closeSheet(holder);
            holder.replaceChildren(el('div', { class: 'te-say te-error', text: got?.body?.error?.message ?? 'the sheet cannot be opened' }));
            return;
        }
        this.drawSheetForm(holder, who, got.body.form, []);
    }

    closeSheet(holder) {
        holder.replaceChildren();
        if (this.sheetOpen?.holder === holder) this.sheetOpen = null;
        holder.parentElement?.querySelector('.te-edit-sheet')?.removeAttribute('disabled');
    }

    drawSheetForm(holder, who, form, problems) {
        const inputs = formInputs(form, problems, () => true, true);
        const save = el('button', { class: 'menu_button te-save', onclick: async () => {
            const changes = {};
            for (const x of holder.querySelectorAll('[data-path]')) {
                if (x.value !== x.getAttribute('data-was')) changes[x.getAttribute('data-path')] = x.value;
            }
            if (!Object.keys(changes).length) {
                this.closeSheet(holder);
                return;
            }
            const got = await this.actions.saveSheet(who, changes);
            if (this.sheetOpen?.holder !== holder) return;
            if (got && got.status >= 400) {
                this.drawSheetForm(holder, who, got.body?.form ?? form, got.body?.problems ?? [{ path: '', message:
                    got.body?.error?.message ?? `refused (${got.status})` }]);
                for (const [path, v] of Object.entries(changes)) {
                    const x = holder.querySelector(`[data-path="${CSS.escape(path)}"]`);
                    if (x) x.value = v;
                }
            } else {
                this.closeSheet(holder);
                this.actions.refresh();
            }
        } }, 'Save');
        const paths = new Set(inputs.flatMap(node => [...node.querySelectorAll('[data-path]')].map(x => x.getAttribute('data-path'))));
        const general = problems.filter(p => !paths.has(p.path)).map(p => el('div', { class: 'te-say te-error', text: p.message }));
        holder.replaceChildren(el('div', { class: 'te-say te-info', text: `${who}'s sheet: change what you like, then Save.` }),
            ...general, ...inputs, el('div', { class: 'te-buttons' }, save,
                el('button', { class: 'menu_button', onclick: () => this.closeSheet(holder) }, 'Cancel')));
    }

    /** The form that starts a campaign from a ruleset of the server's folder, its characters named one a line;
     * it writes the campaign into this chat's Author's Note and opens the first character's sheet (STX-14). Kept
     * through redraws as the picker is (it is drawn in the picker's place). */
    async openStarter() {
        const holder = this.root.querySelector('.te-picker');
        if (!holder) return;
        const mine = { place: this.place, holder };
        this.picking = mine;
        const got = await this.actions.rulesets();
        if (this.picking !== mine) return;
        if (!got || got.status !== 200) {
            this.picking = null;
            holder.replaceChildren(el('div', { class: 'te-say te-error', text: got?.body?.error?.message ?? 'the rulesets cannot be listed' }));
            return;
        }
        const usable = (got.body.rulesets ?? []).filter(r => !r.problem);
        const ruleset = el('select', { class: 'text_pole te-start-ruleset', 'aria-label': 'Ruleset' },
            usable.map(r => el('option', { value: r.file }, `${r.name ?? r.file} (${r.file})`)));
        const name = el('input', { class: 'text_pole te-start-name', type: 'text', placeholder: 'night-run',
            'aria-label': 'Campaign name', autocomplete: 'off' });
        const names = el('textarea', { class: 'text_pole te-start-characters', rows: 3, placeholder: 'Vex\nRook',
            'aria-label': 'Characters, one a line' });
        const said = el('div', { class: 'te-start-problems' });
        const start = el('button', { class: 'menu_button te-start-go', onclick: async () => {
            const characters = names.value.split('\n').map(x => x.trim()).filter(Boolean);
            said.replaceChildren();
            const made = await this.actions.start({ name: name.value.trim(), ruleset: ruleset.value, characters });
            if (this.picking !== mine) return;
            if (!made || made.status !== 201) {
                const problems = made?.body?.problems?.map(p => p.message) ?? [made?.body?.error?.message ?? 'refused'];
                said.replaceChildren(...problems.map(m => el('div', { class: 'te-say te-error', text: m })));
                return;
            }
            // the first character's sheet opens in the first drawing of the new campaign, whichever refresh draws
            // it (writing the marker starts one, and the Author's Note's own input event another)
            this.sheetWanted = { campaign: made.body.campaign, who: made.body.characters[0] };
            this.closePicker(holder);
            await this.actions.pick(made.body.campaign);
        } }, 'Start and play it in this chat');
        holder.replaceChildren(el('div', { class: 'te-starter' },
            el('b', { text: 'Start a campaign' }),
            usable.length ? null : el('div', { class: 'te-say te-error', text: 'The server\'s rulesets folder (--rulesets) has no ruleset that loads.' }),
            el('label', { class: 'te-field' }, el('span', { text: 'Ruleset' }), ruleset),
            el('label', { class: 'te-field' }, el('span', { text: 'Campaign name (letters, digits, - and _)' }), name),
            el('label', { class: 'te-field' }, el('span', { text: 'Characters, one a line' }), names),
            said, el('div', { class: 'te-buttons' }, start,
                el('button', { class: 'menu_button', onclick: () => this.closePicker(holder) }, 'Close'))));
        name.focus({ preventScroll: true });
    }

    receipts(list) {
        // each as the game sheet page lists it (`receipt_context`: the tag as the model wrote it, then the result)
        const items = list.map(r => {
            const m = /^\[\s*(\w+)\s*:(.*)\]$/s.exec(String(r.tag ?? ''));
            const attrs = { ...(m ? attributesOf(m[2]) : {}), result: r.result, now: r.now ?? undefined,
                reason: r.reason ?? undefined, ...(r.record ?? {}) };
            const text = `${String(r.tag ?? '').replace(/\]$/, '')} result="${r.result}"${r.now ? ` now="${r.now}"` : ''}${r.reason ? ` reason="${r.reason}"` : ''}]`;
            const d = describe({ tag: m ? m[1].toLowerCase() : 'sheet', attrs, text });
            return el('li', { class: `te-receipt te-${d.result}`, title: d.detail, text: d.text });
        });
        return el('section', { class: 'te-receipts' }, el('h4', { text: 'Last reply' }),
            items.length ? el('ul', {}, items) : el('div', { class: 'te-none', text: 'No receipt in the last reply.' }));
    }

    checkRoller(s) {
        const place = this.place;
        const was = this.roller?.place === place ? this.roller : null;
        const who = el('select', { class: 'text_pole', 'aria-label': 'Who rolls', 'data-keep': 'roll-who' },
            s.characters.map(c => el('option', { value: c.name }, c.name)));
        const what = el('select', { class: 'text_pole', 'aria-label': 'What is rolled', 'data-keep': 'roll-what' });
        const fill = () => {
            const c = s.characters.find(x => x.name === who.value) ?? s.characters[0];
            what.replaceChildren(...(c?.checks ?? []).flatMap(g => g.rows.map(r =>
                el('option', { value: `${KIND[g.title] ?? 'skill'}:${r.label}` }, `${r.label} (${g.title.toLowerCase()}, ${r.number}${r.unit ? ` ${r.unit}` : ''})`))));
        };
        choose(who, was?.who);
        fill();
        choose(what, was?.what);
        const target = el('input', { type: 'number', class: 'text_pole te-num', placeholder: s.dice_pool ? 'difficulty' : 'DC',
            'aria-label': s.dice_pool ? 'Difficulty (optional)' : 'DC (optional)', 'data-keep': 'roll-target',
            value: was?.target || null });
        // the card on screen in this chat and campaign, kept through redraws until Dismiss or the next roll
        const card = this.rolled?.place === place ? this.rolled.card : el('div', { class: 'te-card' });
        const roll = el('button', { class: 'menu_button te-roll', onclick: async () => {
            const [kind, label] = what.value.split(/:(.*)/s);
            const check = { who: who.value, [kind]: label };
            if (target.value !== '') check[s.dice_pool ? 'difficulty' : 'dc'] = target.value;
            const mine = { place, card };
            this.rolled = mine;
            const got = await this.actions.roll(check);
            if (this.rolled !== mine) return; // dismissed, rolled again, or another chat drawn meanwhile
            card.replaceChildren(...diceCard(got, this.actions, () => {
                if (this.rolled?.card === card) this.rolled = null;
                card.replaceChildren();
            }));
        } }, 'Roll');
        // open as the roller last drawn is now, not as a 'toggle' event left it: that event comes a task after the
        // click, and a redraw landing between the two would close what the player just opened
        const details = el('details', { class: 'te-details te-roller', open: was?.details.open ?? false },
            el('summary', { text: 'Roll a check' }), el('div', { class: 'te-row' }, who, what),
            el('div', { class: 'te-row' }, target, roll), card);
        const mine = { place, details, who: was?.who, what: was?.what, target: was?.target };
        this.roller = mine;
        const keep = () => Object.assign(mine, { who: who.value, what: what.value, target: target.value });
        who.addEventListener('change', () => { fill(); keep(); });
        what.addEventListener('change', keep);
        target.addEventListener('input', keep);
        details.addEventListener('toggle', keep);
        return details;
    }

    /** The campaigns listed to pick from; opened again, the list is asked anew and the choice kept. It stays open
     * through redraws of the same chat and campaign until its Write or Close (STX-13). */
    async openPicker() {
        const holder = this.root.querySelector('.te-picker');
        if (!holder) return;
        const mine = { place: this.place, holder };
        this.picking = mine;
        const chosen = holder.querySelector('select')?.value;
        const got = await this.actions.campaigns();
        if (this.picking !== mine) return; // closed, or another chat or campaign drawn meanwhile
        if (!got || got.status !== 200) {
            this.picking = null;
            holder.replaceChildren(el('div', { class: 'te-say te-error', text: got?.body?.error?.message ?? 'the campaigns cannot be listed' }));
            return;
        }
        const list = got.body.campaigns ?? [];
        const current = chosen ?? this.doc?.campaign?.name ?? '';
        const select = el('select', { class: 'text_pole', 'aria-label': 'Campaign for this chat' },
            list.map(c => el('option', { value: c.name, selected: c.name === current },
                `${c.name}${c.characters.length ? ` (${c.characters.join(', ')})` : ''}`)));
        const close = el('button', { class: 'menu_button te-small', onclick: () => this.closePicker(holder) }, 'Close');
        holder.replaceChildren(el('div', { class: 'te-row' },
            el('span', { class: 'te-label', text: list.length ? 'Play' : 'The server has no campaign yet: start one.' }),
            list.length ? select : null,
            list.length ? el('button', { class: 'menu_button te-small te-write', onclick: () => {
                this.closePicker(holder);
                this.actions.pick(select.value);
            } }, 'Write to this chat\'s Author\'s Note') : null, close));
    }

    /** The picker closed by the player: it stays closed in this chat and campaign until Campaign... opens it. */
    closePicker(holder) {
        holder.replaceChildren();
        if (this.picking?.holder === holder) this.picking = { place: this.picking.place, holder: null };
    }
}

/** A select set to the value it had before a redraw, if that value is still one of its options. */
function choose(select, value) {
    if (value !== undefined && [...select.options].some(o => o.value === value)) select.value = value;
}

/** An open draft told when the sheet drawn above it is at another revision than the one its save names: the save
 * will be refused with the newer sheet (PARTY-36, PARTY-37), the draft kept (STX-12). */
function partyMoved(open, revision) {
    open.holder.querySelector('.te-party-moved')?.remove();
    if (open.revision === null || revision === undefined || revision === open.revision) return;
    open.holder.prepend(el('div', { class: 'te-say te-warning te-party-moved',
        text: 'The party sheet has changed since this form was opened: Save shows you the newer sheet first, with your changes kept.' }));
}

const KIND = { Abilities: 'ability', Skills: 'skill', Saves: 'save' };

/** A sheet form's inputs (the JSON API's `form`) that `wanted` keeps: each editable one as a labelled input or
 * select holding its value, its problems under it; `headed`: each section's label before its inputs. A table (a
 * list's rows) and a value the sheet computes are left to the server's editor page. */
function formInputs(form, problems, wanted, headed = false) {
    const out = [];
    for (const section of form.sections) {
        const rows = [];
        for (const i of section.inputs) {
            if (i.read_only || i.hidden || i.type === 'derived' || !wanted(i)) continue;
            const value = i.value === null || i.value === undefined ? '' : String(i.value);
            const input = i.choices.length
                ? el('select', { class: 'text_pole', 'data-path': i.path, 'data-was': value, 'aria-label': i.label },
                    el('option', { value: '' }, '\u2014'), i.choices.map(([v, lb]) => el('option', { value: v, selected: v === value }, lb)))
                : el('input', { class: 'text_pole', 'data-path': i.path, 'data-was': value, value, 'aria-label': i.label,
                    type: i.type === 'number' || i.type === 'ability' ? 'number' : 'text',
                    min: i.min ?? undefined, max: i.max ?? undefined, maxlength: i.max_length ?? undefined });
            const own = problems.filter(p => p.path === i.path).map(p => el('div', { class: 'te-say te-error', text: p.message }));
            rows.push(el('label', { class: 'te-field' }, el('span', { text: i.label }), input, own));
        }
        if (rows.length && headed) out.push(el('h5', { class: 'te-section', text: section.label }));
        out.push(...rows);
    }
    return out;
}

/** A check's answer (the JSON API's `checks`) as its dice card: the dice, the card's lines, the outcome; `dismiss`
 * removes it (its Dismiss button). */
export function diceCard(got, actions, dismiss = null) {
    if (!got) return [];
    const away = dismiss ? el('button', { class: 'menu_button te-small te-dismiss', onclick: dismiss }, 'Dismiss') : null;
    if (got.status !== 200) {
        return [el('div', { class: 'te-say te-error', text: got.body?.error?.message ?? `refused (${got.status})` }),
            el('div', { class: 'te-buttons' }, away)];
    }
    const b = got.body;
    const faces = el('div', { class: 'te-dice' }, b.dice.faces.map(f => el('span', { class: 'te-die', text: f })));
    const lines = el('pre', { class: 'te-card-lines', text: b.card.join('\n') });
    const outcome = b.outcome ? el('div', { class: `te-outcome te-${b.outcome}`, text: b.outcome }) : null;
    const badge = receiptsIn(b.receipt).map(describe)[0];
    return [faces, outcome, lines,
        el('div', { class: 'te-say te-info', text: 'Nothing is stored: the next check the GM asks for in this chat rolls these very dice.' }),
        el('div', { class: 'te-buttons' }, actions?.toMessage ? el('button', { class: 'menu_button te-small', title: badge?.detail,
            onclick: () => actions.toMessage(b.receipt) }, 'Put the roll in my message') : null, away)];
}
