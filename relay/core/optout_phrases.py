"""The wordings of opt-outs in seven languages, for :mod:`relay.core.optout`.

Written as small grammars rather than sentences: a verb of stopping with a
verb of contacting ("dejen de escribir(me)", "hört auf ... zu schreiben"), a
negation with "more/again" ("não me contactem mais", "ne me recontactez
plus"), removing me or my data from a list ("haal me van de lijst", "meine
Nummer löschen"), not wanting to receive more, leave me alone. Checked on
wordings written before these rules were read (``tests/data/optout``).
"""

from __future__ import annotations

import re

#: Clauses that may come with a keyword: a reason, not a conversation.
REASON = re.compile(
    r"\b(?:not\s+interested|wrong\s+(?:number|person)|(?:this\s+is\s+)?spam|never\s+signed\s+up"
    r"|no\s+thanks|no\s+me\s+interesa|nao\s+tenho\s+interesse|pas\s+interesse|kein\s+interesse"
    r"|non\s+mi\s+interessa|geen\s+interesse|numero\s+equivocado|numero\s+errado|falsche\s+nummer)\b"
)

#: Verbs of sending and contacting, as they follow "stop" in English.
_EN_SENDING = (
    r"sending|texting|txting|messaging|msging|emailing|e-mailing|mailing|contacting|calling"
    r"|ringing|bothering|spamming|writing|harassing|pestering"
)
_EN_THINGS = r"messages?|texts?|txts?|msgs?|emails?|e-mails?|mails?|sms|spam|crap|stuff|junk|calls?"
_LIST = r"list|lists|database|system|contacts|records|mailing\s+list|files?|distribution"
NOT_BEFORE = re.compile(
    r"\b(?:don'?t|do\s+not|never|won'?t|wouldn'?t|not|no|nao|non|nicht|niet|ne|n')\s+(?:\w+\s+)?$"
)
#: Phrases whose meaning flips after a negation ("don't stop sending me updates").
STOP_PHRASES = [
    # stop sending me messages / quit texting me / please stop calling me
    rf"\b(?:stop|quit|cease)\s+(?:{_EN_SENDING})"
    rf"(?=\s*$|\s+(?:to\s+)?(?:me|us)\b|\s+(?:these|those|the|your|this|any|all|such)?\s*(?:{_EN_THINGS})\b)",
    # es: dejen de enviarme / deja de escribirme
    r"\b(?:dej|par)(?:en|a|e|ad)\s+de\s+(?:enviar|escribir|mandar|contactar|llamar|molestar|textear)"
    r"(?:me|nos)\b",
    # pt: parem de me enviar mensagens / pare de me mandar
    r"\bpar(?:e|em|ar)\s+de\s+(?:me\s+)?(?:enviar|mandar|contatar|ligar|escrever|perturbar)\b",
    # fr: arrêtez de m'envoyer
    r"\barret(?:ez|e|er)\s+de\s+m'?\s*(?:envoyer|ecrire|contacter|appeler|spammer|harceler)",
    # de: hören Sie auf, mir zu schreiben
    r"\bhor(?:en\s+sie|t)?\s+auf\s*,?\s+(?:mir|mich)\s+(?:\w+\s+){0,3}zu\s+"
    r"(?:schreiben|schicken|senden|mailen|kontaktieren|nerven)",
    # it: smettete di scrivermi
    r"\bsmett\w*\s+di\s+(?:scriver|contattar|mandar|inviar|chiamar|disturbar)mi\b",
    # nl: stop met mailen
    r"\bstop\s+met\s+(?:mailen|sms'?en|appen|bellen|berichten|het\s+sturen|sturen|mij\s+te)",
    # unsubscribe / opt out (the words themselves, not "unsubscribed")
    r"\b(?:unsubscribe|optout)\b",
]
PHRASES = [
    # remove me / take me off your list / delete my number
    rf"\b(?:remove|delete|erase|drop|scratch)\s+(?:me|us|my\s+(?:number|name|email|e-mail"
    rf"|email\s+address|address|details|info|information|data|contact(?:\s+info)?))"
    rf"(?=\s*(?:please|pls|now|thanks|thank\s+you|asap)?\s*$|\s+(?:from|off|out\s+of)\s+(?:\w+\s+){{0,2}}(?:{_LIST})\b)",
    rf"\btake\s+(?:me|us|my\s+\w+)\s+(?:off|out\s+of)\s+(?:\w+\s+){{0,2}}(?:{_LIST})\b",
    r"\b(?:lose|forget|delete|erase)\s+(?:my|this)\s+(?:number|email|e-mail|address|contact)\b",
    r"\bleave\s+(?:me|us)\s+alone\b",
    # do not contact me again / don't text me anymore — not "don't call me before 10am"
    r"\b(?:do\s+not|don'?t|never)\s+(?:ever\s+)?(?:contact|text|txt|message|msg|email|e-mail|mail"
    r"|write\s+to|write|bother|spam)\s+(?:me|us)\b"
    r"(?!\s+(?:before|after|until|till|on|at|between|now|today|tonight|tomorrow|this|in|during"
    r"|while|when|right|about|yet|back|here|there|on\s+this)\b)",
    # calls are logistics ("dont call me, i will wait"): only "don't call me again/anymore"
    r"\b(?:do\s+not|don'?t|never)\s+(?:ever\s+)?(?:call|phone|ring)\s+(?:me|us)\s+"
    r"(?:again|anymore|any\s+more|ever)\b",
    rf"\bno\s+more\s+(?:{_EN_THINGS}|contact)\b",
    r"\b(?:i|we)\s*(?:'d|would|want|wish|need|'m\s+asking)?\s*(?:like\s+)?to\s+(?:be\s+)?"
    r"(?:removed|unsubscribed|taken\s+off|opted\s+out)\b",
    r"\b(?:u|you)\s+(?:can|may|could)\s+stop(?:\s+now)?\s*$",
    rf"\b(?:don'?t|do\s+not|no\s+longer)\s+(?:want|wish|need|like)\s+(?:to\s+)?(?:receive|get)\s+"
    rf"(?:\w+\s+){{0,2}}(?:{_EN_THINGS}|communications?|newsletters?)\b",
    r"\bcease\s+(?:all\s+)?(?:communications?|contact)\b",
    # es
    r"\b(?:dame|denme|darme|darnos|den|dar)\s+de\s+baja\b",
    r"\bno\s+(?:me|nos)\s+(?:vuelva[ns]?\s+a\s+)?(?:escrib|envi|mand|contact|llam|molest|text)\w*+"
    r"(?!\s+(?:antes|despues|hasta|por\s+la|en\s+la|a\s+las|hoy|ahora|manana|el)\b)",
    r"\b(?:elimin|borr|quit|sac|saq|remuev|retir|tir|remov|exclu)\w*\s+(?:(?:me|nos|mi|meu|o\s+meu|minha)"
    r"\s+(?:\w+\s+)?)?(?:de|del|da|do|dessa|desta)\s+(?:\w+\s+)?(?:lista|listas|base|cadastro"
    r"|contactos|contatos)\b",
    r"\b(?:elimin|borr)\w*\s+mi\s+(?:numero|correo|email|contacto|telefono)\b",
    r"\bno\s+quiero\s+(?:recibir\s+)?(?:mas|ningun)\b",
    r"\bno\s+mas\s+(?:mensajes|correos|emails|llamadas|sms)\b",
    r"\bcancelar\s+(?:la\s+|mi\s+|a\s+|minha\s+)?(?:suscripcion|subscripcion|inscricao|subscricao"
    r"|assinatura)\b",
    r"\bdesuscrib\w*|\bdescadastr\w*",
    r"\bdej(?:en|a|ad)?me\s+en\s+paz\b|\bdejenme\s+tranquil",
    # pt
    r"\bnao\s+(?:me\s+)?(?:envi|mand|contat|lig|escrev|perturb)\w*\s+mais\b",
    r"\bnao\s+(?:me\s+)?(?:envi|mand)\w*\s+(?:mais\s+)?mensage",
    r"\bnao\s+(?:entre|entrem)\s+mais\s+em\s+contato\b",
    r"\bnao\s+quero\s+(?:mais\s+)?receber\b",
    r"\bquero\s+sair\s+da\s+lista\b",
    r"\b(?:exclu|remov|apag|delet)\w*\s+(?:o\s+)?meu\s+(?:numero|contato|email|cadastro|telefone)\b",
    r"\bme\s+deix[ae]m?\s+em\s+paz\b|\bdeix[ae]m?-?me\s+em\s+paz\b",
    r"\bchega\s+de\s+(?:mensagens|emails|sms|ligacoes)\b",
    # fr
    r"\bdesabonnement\b|\bdesinscription\b|\bdesabonner\b|\bdesinscrire\b|\bdesabonnez\b"
    r"|\bdesinscrivez\b",
    r"\bne\s+(?:m'|me\s+)\s*(?:envoy|ecriv|contact|appel|ecri|envoi)\w*\s+plus\b",
    r"\b(?:retirez|supprimez|enlevez|effacez|retire|supprime|enleve|rayez)[-\s]?(?:moi\b|mon\s+"
    r"(?:numero|adresse|email|contact)|mes\s+coordonnees)",
    r"\bje\s+ne\s+(?:veux|souhaite)\s+plus\s+(?:recevoir|etre\s+contacte)",
    r"\bne\s+plus\s+(?:me|m')\s*(?:contacter|ecrire|envoyer|appeler|solliciter)",
    r"\b(?:me|nous)\s+(?:retirer|supprimer|desinscrire|enlever)\s+(?:de|des)\s+(?:\w+\s+)?"
    r"(?:liste|listes|fichier|base)",
    r"\blaisse[zr]?[-\s]?moi\s+tranquille\b",
    r"\bplus\s+de\s+(?:messages|mails|emails|sms|appels)\s*(?:svp|stp|merci|s'il\s+vous\s+plait)?\s*$",
    # de
    r"\babmelden\b|\babbestellen\b|\baustragen\b",
    r"\bmelden\s+sie\s+mich\s+(?:\w+\s+)?ab\b|\bmeld\s+mich\s+ab\b",
    r"\btragen\s+sie\s+mich\s+(?:\w+\s+){0,4}aus\b",
    r"\b(?:schreiben|schicken|senden|kontaktieren|mailen|simsen)\s+sie\s+(?:mir|mich)\s+(?:\w+\s+){0,2}"
    r"(?:nicht|keine)\b.*\bmehr\b",
    r"\b(?:loschen|entfernen)\s+sie\s+(?:mich|meine\s+(?:nummer|daten|adresse|e-mail|kontaktdaten))",
    r"\bkeine\s+(?:weiteren\s+)?(?:nachrichten|e-mails|emails|mails|sms|anrufe|werbung)\s+mehr\b",
    r"\b(?:mochte|will|wunsche)\s+keine\s+(?:weiteren\s+)?(?:nachrichten|e-mails|emails|mails|sms"
    r"|anrufe|werbung|newsletter)\b",
    r"\bnehmen\s+sie\s+mich\s+aus\s+(?:\w+\s+)?(?:verteiler|liste|datenbank|kartei)",
    r"\blass(?:en\s+sie|t)?\s+mich\s+in\s+ruhe\b",
    # it
    r"\bcancellami\b|\bcancellatemi\b|\bdisiscriv\w*|\bdisiscrizione\b",
    r"\bcancellate\s+il\s+mio\s+(?:numero|contatto|indirizzo)",
    r"\bnon\s+(?:mi\s+)?(?:scriv|contatt|mand|invi|chiam|disturb)\w*\s+(?:\w+\s+)?piu\b",
    r"\b(?:togli|rimuov|cancell)\w*\s+(?:\w+\s+){0,2}(?:dalla|dalle|dal|dai)\s+(?:vostra\s+|sua\s+)?"
    r"(?:lista|mailing|elenco|database|contatti)",
    r"\bnon\s+voglio\s+piu\s+ricevere\b",
    r"\b(?:essere\s+)?(?:rimoss|cancellat|tolt)[oaie]\s+(?:dalla|dalle|dal|dai)\s+(?:vostra\s+|sua\s+)?"
    r"(?:lista|mailing|elenco|database|contatti)",
    r"\bbasta\s+(?:con\s+(?:i|questi)\s+)?(?:messaggi|email|mail|sms|chiamate)\b",
    r"\blasciate?mi\s+in\s+pace\b",
    # nl
    r"\buitschrijven\b|\bafmelden\b|\bschrijf\s+(?:me|mij|ons)\s+uit\b|\bmeld\s+(?:me|mij|ons)\s+af\b",
    r"\bstuur\s+(?:me|mij|ons)\s+geen\s+(?:\w+\s+)?meer\b",
    r"\bneem\s+geen\s+contact\s+meer\b",
    r"\bhaal\s+(?:me|mij)\s+uit\s+(?:\w+\s+)?(?:bestand|lijst|database|mailinglijst)\b",
    r"\bverwijder\s+(?:mij|me|mijn\s+(?:nummer|gegevens|e-?mail|adres))\b",
    r"\bniet\s+meer\s+(?:ge)?(?:mail|bel|contact|sms|app|bericht)\w*",
    r"\bik\s+wil\s+geen\s+(?:\w+\s+)?meer\s+(?:ontvangen|krijgen)\b",
    r"\bgeen\s+(?:berichten|mails|e-mails|sms(?:jes)?|telefoontjes)\s+meer\b",
    r"\blaat\s+(?:me|mij)\s+met\s+rust\b",
]
