// French first, English on a switch; the choice is kept in localStorage.
// Static text carries data-i18n="key" (its text) or data-i18n-attr="attr:key;attr:key".

const STORAGE_KEY = "pharaon.lang";

const TEXT = {
  fr: {
    switch_to: "English",
    switch_lang: "en",
    title: "Pharaon",
    tagline: "Jeu instantané en ligne — argent fictif",
    nav: "Sections",
    nav_game: "Jeu",
    nav_account: "Compte",
    nav_history: "Historique",
    nav_info: "Infos",
    balance: "Solde\u00a0:",
    balance_hidden: "mise déduite, lot de la partie en cours à venir",
    logout: "Se déconnecter",
    signup_title: "Créer un compte",
    signup_note: "Réservé aux personnes majeures (18 ans ou plus).",
    login_title: "Se connecter",
    email: "Adresse e-mail",
    password: "Mot de passe",
    birth_date: "Date de naissance",
    signup: "Créer mon compte",
    login: "Se connecter",
    stake: "Mise",
    jouer: "Jouer",
    auto: "Auto",
    jouer_hint: "Jouer : vous grattez les quatre grilles. Auto : tout est découvert d'un coup.",
    finish_first: "Découvrez d'abord les quatre grilles de la partie en cours.",
    welcome: "Choisissez votre mise puis appuyez sur « Jouer » ou « Auto ».",
    board: "Plateau de jeu",
    grid: "Grille {n}",
    scratch: "Gratter",
    bonus_title: "Énigme bonus",
    bonus_note: "Le carré central du plateau : 4 symboles identiques en contact gagnent.",
    play_ref: "Partie n° {id} — mise {stake} — unité {serial}",
    resumed: "Partie reprise là où elle s'était arrêtée.",
    lot: "Lot",
    lot_won: "Gagné ! Votre lot : {amount}",
    lot_none: "Pas de lot cette fois ({amount}).",
    combos: "Combinaisons gagnantes",
    combo_line: "{symbol} ×4, grille {grid}, {where}",
    combo_bonus: "{symbol} ×4 en contact dans l'énigme bonus",
    row: "ligne {n}",
    column: "colonne {n}",
    diagonal: "diagonale",
    winning: "gagnant",
    covered: "couverte",
    deposit_title: "Déposer (argent fictif)",
    amount: "Montant en euros",
    deposit: "Déposer",
    deposited: "Dépôt de {amount} enregistré.",
    limits_title: "Limites de dépôt",
    limits_note:
      "Laissez vide pour aucune limite. Une baisse s'applique tout de suite, une hausse après 24 h.",
    daily: "Par jour",
    weekly: "Par semaine",
    monthly: "Par mois",
    save_limits: "Enregistrer les limites",
    limits_saved: "Limites enregistrées.",
    no_limit: "aucune",
    pending: "{period} : {amount} à partir du {when}",
    pending_title: "Hausses en attente",
    exclusion_title: "Auto-exclusion",
    exclusion_note: "Bloque le jeu et les dépôts pendant la durée choisie. Irréversible.",
    days: "Nombre de jours (1 à 3650)",
    exclude: "M'exclure",
    exclude_confirm: "Confirmer l'exclusion de {days} jour(s)",
    exclude_cancel: "Annuler",
    excluded_until: "Vous êtes auto-exclu jusqu'au {when} : jeu et dépôts bloqués.",
    history_title: "Vos dernières parties",
    history_empty: "Aucune partie pour l'instant.",
    col_date: "Date",
    col_stake: "Mise",
    col_lot: "Lot",
    col_before: "Solde avant",
    col_after: "Solde après",
    col_action: "Détail",
    unfinished: "en cours",
    view: "Voir",
    view_play: "Voir la partie n° {id}",
    resume: "Reprendre",
    resume_play: "Reprendre la partie n° {id}",
    more: "Parties plus anciennes",
    close: "Fermer",
    detail_title: "Partie n° {id} du {when}",
    ticket: "Ticket :",
    remaining_title: "Lots restants",
    remaining_note: "Dans le bloc en vente à chaque mise.",
    remaining_count: "Restants",
    remaining_none: "Aucun bloc en vente à {stake}.",
    rules_title: "Règles",
    rules_text: [
      "Chaque jeu compte quatre grilles de 4 × 4 cases (grilles 1 et 2 en haut, 3 et 4 en bas) remplies de six symboles.",
      "Quatre symboles identiques alignés dans une grille (ligne, colonne ou diagonale) gagnent le gain du symbole.",
      "Énigme bonus : le carré central de 4 × 4 cases formé par les quatre grilles. Quatre symboles identiques en contact horizontal ou vertical y gagnent le gain bonus du symbole ; le scarabée n'y gagne rien.",
      "Le lot est la somme de toutes les combinaisons gagnantes, multipliée par la mise ({prices}). Il est fixé au moment de l'achat.",
    ],
    symbols_title: "Gains par symbole (mise de 1 €)",
    col_symbol: "Symbole",
    col_line: "4 alignés dans une grille",
    col_bonus: "4 en contact (bonus)",
    prizes_title: "Lots de chaque bloc d'un million de jeux",
    col_lots: "Nombre",
    col_amount: "Lot à {stake}",
    col_cumul: "Seulement par cumul",
    yes: "oui",
    no_gain: "—",
    loading: "Chargement…",
    err_network: "Le serveur ne répond pas. Vérifiez votre connexion puis réessayez.",
    err_network_retry:
      "Le serveur ne répond pas. « Réessayer » renvoie la même demande : vous ne serez pas débité deux fois.",
    retry: "Réessayer",
    err_insufficient_funds: "Solde insuffisant pour cette mise. Déposez de l'argent dans « Compte ».",
    err_deposit_limit: "Limite de dépôt atteinte : ce dépôt dépasserait la limite que vous avez fixée.",
    err_self_excluded: "Vous êtes auto-exclu : le jeu et les dépôts sont bloqués pour le moment.",
    err_sold_out: "Plus aucun jeu à {stake} n'est en vente pour le moment. Choisissez une autre mise.",
    err_unauthorized: "Vous n'êtes pas connecté, ou votre session a expiré. Connectez-vous.",
    err_login: "Adresse e-mail ou mot de passe incorrect.",
    err_locked_out: "Trop d'essais manqués : connexion bloquée pendant 15 minutes.",
    err_underage: "Il faut avoir 18 ans ou plus pour jouer.",
    err_email_taken: "Un compte existe déjà avec cette adresse e-mail.",
    err_validation_error: "Données refusées : {detail}",
    err_csrf: "Sécurité de la session invalide. Rechargez la page et reconnectez-vous.",
    err_not_found: "Introuvable.",
    err_forbidden: "Action refusée.",
    err_conflict: "Demande en conflit : {detail}",
    err_idempotency_conflict: "Cette demande a déjà été envoyée avec d'autres valeurs.",
    err_bad_request: "Demande refusée : {detail}",
    err_amount: "Montant invalide : écrivez un nombre d'euros, par exemple 10 ou 10,50.",
    err_days: "Nombre de jours invalide : de 1 à 3650.",
    err_other: "Erreur du serveur ({status}). Réessayez plus tard.",
    period_daily: "par jour",
    period_weekly: "par semaine",
    period_monthly: "par mois",
    loss_weekly: "Pertes nettes sur 7 jours",
    period_loss: "pertes nettes sur 7 jours",
    err_loss_limit:
      "Limite de pertes atteinte : cette mise ferait dépasser vos pertes nettes des 7 derniers jours au-delà de la limite fixée.",
    reality_title: "Point sur le jeu",
    reality_note:
      "Pendant une session, affiche régulièrement le temps de jeu et le résultat net (gains moins mises) depuis la connexion.",
    reality_every: "Afficher toutes les",
    reality_off: "Jamais",
    reality_save: "Enregistrer",
    reality_saved: "Réglage du point sur le jeu enregistré.",
    reality_dialog_title: "Point sur votre session",
    reality_time: "Vous jouez depuis {minutes} min (connexion à {when}).",
    reality_net: "Résultat net de la session : {amount} (gains {wins}, mises {stakes}).",
    reality_continue: "Continuer",
    verify: "Vérifier",
    verify_play: "Vérifier la partie n° {id}",
    proof_checking: "Partie n° {id} : vérification de la preuve…",
    proof_ok:
      "Partie n° {id} vérifiée : le jeu n° {serial} (lot {lot}) appartient bien au bloc {block} publié, de racine Merkle {root} (voir « Infos »).",
    proof_refused: "Partie n° {id} : preuve REFUSÉE. {why}",
    proof_not_in_block:
      "Recalculé ici, le chemin de la preuve ne mène pas à la racine Merkle publiée du bloc : rien ne prouve que ce jeu en fasse partie.",
    proof_other_unit: "La preuve reçue ne porte pas sur le jeu de cette partie.",
    proof_malformed: "La preuve reçue est mal formée.",
    proof_no_block: "Le bloc de cette partie ne figure pas parmi les blocs publiés.",
    blocks_title: "Blocs publiés",
    blocks_note:
      "Chaque bloc est fixé avant sa vente. Sa racine Merkle engage chacun de ses jeux et de ses lots : « Vérifier », dans l'historique, prouve qu'une partie est un jeu de ce bloc. Les deux clés qui ont tiré le bloc sont engagées par leur SHA-256.",
    col_block: "Bloc",
    col_price: "Prix",
    col_state: "État",
    col_loaded: "Chargé le",
    col_root: "Racine Merkle",
    col_units_sha: "SHA-256 des jeux",
    col_vendor_key: "Clé du fournisseur (SHA-256)",
    col_operator_key: "Clé de l'opérateur (SHA-256)",
    state_loaded: "en attente",
    state_open: "en vente",
    state_sold_out: "épuisé",
    state_deactivated: "désactivé",
    not_given: "non publiée",
    blocks_none: "Aucun bloc chargé.",
    test_block: "(test)",
    landing_title: "Pharaon, le jeu de grattage de l'Égypte ancienne",
    landing_lead:
      "Quatre grilles de 4 × 4 à découvrir : quatre symboles identiques alignés (ligne, colonne ou diagonale) gagnent leur lot, et la grille bonus au centre en ajoute.",
    landing_sample: "Exemple de grille",
    landing_sample_note: "Exemple : quatre pyramides alignées gagnent {amount} à 1 €.",
    landing_top_title: "Les plus gros lots",
    landing_top: "à {price} ; puis {next}",
    landing_odds: "1 chance sur {odds} de gagner un lot, à chaque prix.",
    landing_play_money: "Argent fictif : un compte pour essayer le jeu, sans enjeu réel."
  },
  en: {
    switch_to: "Français",
    switch_lang: "fr",
    title: "Pharaon",
    tagline: "Online instant game — play money",
    nav: "Sections",
    nav_game: "Game",
    nav_account: "Account",
    nav_history: "History",
    nav_info: "Info",
    balance: "Balance:",
    balance_hidden: "stake paid, the current game's prize still to come",
    logout: "Log out",
    signup_title: "Create an account",
    signup_note: "Adults only (18 or over).",
    login_title: "Log in",
    email: "Email address",
    password: "Password",
    birth_date: "Date of birth",
    signup: "Create my account",
    login: "Log in",
    stake: "Stake",
    jouer: "Play",
    auto: "Auto",
    jouer_hint: "Play: you scratch the four grids. Auto: everything is uncovered at once.",
    finish_first: "First uncover the four grids of the current game.",
    welcome: "Choose your stake, then press “Play” or “Auto”.",
    board: "Game board",
    grid: "Grid {n}",
    scratch: "Scratch",
    bonus_title: "Bonus enigma",
    bonus_note: "The board's central square: 4 identical symbols in contact win.",
    play_ref: "Game no. {id} — stake {stake} — unit {serial}",
    resumed: "Game resumed where it stopped.",
    lot: "Prize",
    lot_won: "You win! Your prize: {amount}",
    lot_none: "No prize this time ({amount}).",
    combos: "Winning combinations",
    combo_line: "{symbol} ×4, grid {grid}, {where}",
    combo_bonus: "{symbol} ×4 in contact in the bonus enigma",
    row: "row {n}",
    column: "column {n}",
    diagonal: "diagonal",
    winning: "winning",
    covered: "covered",
    deposit_title: "Deposit (play money)",
    amount: "Amount in euros",
    deposit: "Deposit",
    deposited: "Deposit of {amount} recorded.",
    limits_title: "Deposit limits",
    limits_note: "Leave empty for no limit. A lower limit applies at once, a higher one after 24 h.",
    daily: "Per day",
    weekly: "Per week",
    monthly: "Per month",
    save_limits: "Save limits",
    limits_saved: "Limits saved.",
    no_limit: "none",
    pending: "{period}: {amount} from {when}",
    pending_title: "Pending increases",
    exclusion_title: "Self-exclusion",
    exclusion_note: "Blocks play and deposits for the chosen time. Cannot be undone.",
    days: "Number of days (1 to 3650)",
    exclude: "Exclude me",
    exclude_confirm: "Confirm exclusion for {days} day(s)",
    exclude_cancel: "Cancel",
    excluded_until: "You are self-excluded until {when}: play and deposits are blocked.",
    history_title: "Your last games",
    history_empty: "No games yet.",
    col_date: "Date",
    col_stake: "Stake",
    col_lot: "Prize",
    col_before: "Balance before",
    col_after: "Balance after",
    col_action: "Detail",
    unfinished: "in progress",
    view: "View",
    view_play: "View game no. {id}",
    resume: "Resume",
    resume_play: "Resume game no. {id}",
    more: "Older games",
    close: "Close",
    detail_title: "Game no. {id} of {when}",
    ticket: "Ticket:",
    remaining_title: "Remaining prizes",
    remaining_note: "In the block on sale at each stake.",
    remaining_count: "Remaining",
    remaining_none: "No block on sale at {stake}.",
    rules_title: "Rules",
    rules_text: [
      "Each game has four grids of 4 × 4 cells (grids 1 and 2 on top, 3 and 4 below) filled with six symbols.",
      "Four identical symbols aligned in a grid (row, column or diagonal) win that symbol's gain.",
      "Bonus enigma: the central 4 × 4 square formed by the four grids. Four identical symbols there in horizontal or vertical contact win the symbol's bonus gain; the scarab wins nothing there.",
      "The prize is the sum of all winning combinations, times the stake ({prices}). It is fixed when the game is bought.",
    ],
    symbols_title: "Gains per symbol (1 € stake)",
    col_symbol: "Symbol",
    col_line: "4 aligned in a grid",
    col_bonus: "4 in contact (bonus)",
    prizes_title: "Prizes of every block of one million games",
    col_lots: "Count",
    col_amount: "Prize at {stake}",
    col_cumul: "Only by cumulation",
    yes: "yes",
    no_gain: "—",
    loading: "Loading…",
    err_network: "The server does not answer. Check your connection and try again.",
    err_network_retry:
      "The server does not answer. “Retry” sends the same request again: you will not be charged twice.",
    retry: "Retry",
    err_insufficient_funds: "Balance too low for this stake. Deposit money under “Account”.",
    err_deposit_limit: "Deposit limit reached: this deposit would go over the limit you set.",
    err_self_excluded: "You are self-excluded: play and deposits are blocked for now.",
    err_sold_out: "No more games at {stake} are on sale for now. Choose another stake.",
    err_unauthorized: "You are not logged in, or your session has expired. Please log in.",
    err_login: "Wrong email address or password.",
    err_locked_out: "Too many failed attempts: logging in is blocked for 15 minutes.",
    err_underage: "You must be 18 or over to play.",
    err_email_taken: "An account already exists with this email address.",
    err_validation_error: "Refused: {detail}",
    err_csrf: "Session security check failed. Reload the page and log in again.",
    err_not_found: "Not found.",
    err_forbidden: "Not allowed.",
    err_conflict: "Conflicting request: {detail}",
    err_idempotency_conflict: "This request was already sent with other values.",
    err_bad_request: "Request refused: {detail}",
    err_amount: "Invalid amount: write a number of euros, for example 10 or 10.50.",
    err_days: "Invalid number of days: 1 to 3650.",
    err_other: "Server error ({status}). Please try again later.",
    period_daily: "per day",
    period_weekly: "per week",
    period_monthly: "per month",
    loss_weekly: "Net losses over 7 days",
    period_loss: "net losses over 7 days",
    err_loss_limit:
      "Loss limit reached: this stake would take your net losses of the last 7 days past the limit you set.",
    reality_title: "Reality check",
    reality_note:
      "During a session, regularly shows the time played and the net result (wins minus stakes) since you logged in.",
    reality_every: "Show every",
    reality_off: "Never",
    reality_save: "Save",
    reality_saved: "Reality check setting saved.",
    reality_dialog_title: "Your session so far",
    reality_time: "You have been playing for {minutes} min (logged in at {when}).",
    reality_net: "Net result of the session: {amount} (wins {wins}, stakes {stakes}).",
    reality_continue: "Continue",
    verify: "Verify",
    verify_play: "Verify game no. {id}",
    proof_checking: "Game no. {id}: checking the proof…",
    proof_ok:
      "Game no. {id} verified: unit no. {serial} (prize {lot}) does belong to the published block {block}, of Merkle root {root} (see « Info »).",
    proof_refused: "Game no. {id}: proof REFUSED. {why}",
    proof_not_in_block:
      "Recomputed here, the proof's path does not lead to the block's published Merkle root: nothing proves this unit belongs to it.",
    proof_other_unit: "The proof received is not about this game's unit.",
    proof_malformed: "The proof received is malformed.",
    proof_no_block: "This game's block is not among the published blocks.",
    blocks_title: "Published blocks",
    blocks_note:
      "Each block is fixed before its sale. Its Merkle root commits to every unit and prize in it: « Verify », in the history, proves that a game is a unit of that block. The two keys that drew the block are committed by their SHA-256.",
    col_block: "Block",
    col_price: "Price",
    col_state: "State",
    col_loaded: "Loaded",
    col_root: "Merkle root",
    col_units_sha: "Units SHA-256",
    col_vendor_key: "Vendor's key (SHA-256)",
    col_operator_key: "Operator's key (SHA-256)",
    state_loaded: "waiting",
    state_open: "on sale",
    state_sold_out: "sold out",
    state_deactivated: "deactivated",
    not_given: "not published",
    blocks_none: "No block loaded.",
    test_block: "(test)",
    landing_title: "Pharaon, the scratch game of ancient Egypt",
    landing_lead:
      "Four 4 × 4 grids to uncover: four identical symbols in a line (row, column or diagonal) win their prize, and the bonus grid in the middle adds more.",
    landing_sample: "A sample grid",
    landing_sample_note: "For example: four pyramids in a line win {amount} at 1 €.",
    landing_top_title: "The largest prizes",
    landing_top: "at {price}; then {next}",
    landing_odds: "1 chance in {odds} of winning a prize, at every price.",
    landing_play_money: "Play money: an account to try the game, with nothing real at stake."
  },
};

let current = localStorage.getItem(STORAGE_KEY) === "en" ? "en" : "fr";

export function lang() {
  return current;
}

export function setLang(value) {
  current = value === "en" ? "en" : "fr";
  localStorage.setItem(STORAGE_KEY, current);
}

/** A page's translator over its texts ({fr: {...}, en: {...}}): `t(key, params)`, the text
 * (or list of texts) in the current language with `{name}` replaced from `params`, and
 * `applyStatic(root)`, which translates the page's static parts (`data-i18n`,
 * `data-i18n-attr="attr:key;..."`). */
export function translator(texts) {
  const fill = (text, params) => text.replace(/\{(\w+)\}/g, (_, name) => String(params[name] ?? ""));
  function t(key, params = {}) {
    const value = texts[current][key] ?? texts.fr[key] ?? key;
    if (Array.isArray(value)) return value.map((text) => fill(text, params));
    return typeof value === "string" ? fill(value, params) : value;
  }
  function applyStatic(root = document) {
    document.documentElement.lang = current;
    document.title = t("title");
    for (const node of root.querySelectorAll("[data-i18n]")) {
      node.textContent = t(node.dataset.i18n);
    }
    for (const node of root.querySelectorAll("[data-i18n-attr]")) {
      for (const pair of node.dataset.i18nAttr.split(";")) {
        const [attr, key] = pair.split(":");
        node.setAttribute(attr, t(key));
      }
    }
  }
  return { t, applyStatic };
}

export const { t, applyStatic } = translator(TEXT);

/** A symbol's name from the rules table, in the current language. */
export function symbolName(rules, code) {
  const symbol = rules?.symbols.find((s) => s.code === code);
  if (!symbol) return code;
  return current === "en" ? symbol.name_en : symbol.name;
}

/** "1 €, 2 € ou 3 €" / "1 €, 2 € or 3 €": one of `items`, said in the current language. */
export function formatChoice(items) {
  const locale = current === "en" ? "en-GB" : "fr-FR";
  return new Intl.ListFormat(locale, { type: "disjunction" }).format(items);
}

/** Dates and times for people, in the current language. */
export function formatWhen(iso, { timeZone } = {}) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(current === "en" ? "en-GB" : "fr-FR", {
    dateStyle: "short",
    timeStyle: "short",
    timeZone, // undefined: the browser's own
  }).format(date);
}
