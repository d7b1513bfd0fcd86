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

#: What a sender sends, in the seven languages ("these texts", "vos messages", "Ihre Angebote").
_CONTENT = (
    r"messages?|texts?|txts?|msgs?|e-?mails?|mails?|sms|spam|newsletters?|offers|promotions|ads"
    r"|mensajes?|correos?|promociones|ofertas|publicidad|mensage(?:m|ns)|promocoes|propagandas?"
    r"|courriels?|offres|publicites?|sollicitations|nachrichten|nachricht|angebote|werbung"
    r"|zusendungen|messaggi|messaggio|offerte|comunicazioni|promozioni|pubblicita|berichten|bericht"
    r"|aanbiedingen|nieuwsbrieven|reclame|appjes|informacion|informacoes|informations|informationen"
    r"|informazioni|informatie"
)
#: Not wanting (any more): "I don't want", "no quiero", "je ne veux plus", "ich will keine".
_WANT_NOT = (
    r"don'?t\s+want|do\s+not\s+want|(?:'d|would)\s+rather\s+not|no\s+longer\s+want"
    r"|no\s+(?:quiero|deseo|queremos)|nao\s+(?:quero|desejo|queremos)|(?:ne\s+)?(?:veux|souhaite|desire)"
    r"\s+plus|(?:mochte|will|wollen)\s+(?:\w+\s+){0,3}(?:nicht\s+mehr|keine)|non\s+(?:voglio|desidero"
    r"|vogliamo)|(?:wil|willen|wens)\s+(?:\w+\s+){0,3}(?:niet\s+meer|geen)"
)
#: Clauses that may come with a keyword: a reason, not a conversation.
REASON = re.compile(
    r"\b(?:not\s+interested|wrong\s+(?:number|person)|(?:this\s+is\s+)?spam|never\s+signed\s+up"
    r"|no\s+thanks|no\s+me\s+interesa|nao\s+tenho\s+interesse|pas\s+interesse|kein\s+interesse"
    r"|non\s+mi\s+interessa|geen\s+interesse|numero\s+equivocado|numero\s+errado|falsche\s+nummer"
    r"|ca\s+(?:ne\s+)?m'interesse\s+pas|mauvais\s+numero|numero\s+sbagliato|verkeerd\s+nummer"
    # "Stop it. I don't know you", "I never gave you my number, stop", "Please stop. I've asked"
    r"|(?:i\s+)?don'?t\s+know\s+(?:you|u)|never\s+gave\s+(?:you|u)\s+my\s+(?:number|email|address)"
    r"|(?:i'?ve|i\s+have|i)\s+(?:already\s+)?asked|keep\s+telling\s+you|(?:already\s+)?told\s+you"
    # "This is the 4th message this week", "Das ist jetzt die dritte Nachricht"
    rf"|(?:\d+(?:st|nd|rd|th|e|o|a)?|second|third|fourth|fifth|zweite|dritte|vierte|deuxieme|troisieme"
    rf"|secondo|terzo|quarto|tweede|derde|vierde|segundo|tercer|terceira|terceiro|cuarto|quarta)"
    rf"\s+(?:{_CONTENT}))\b"
)
#: Not wanting the sender to stop: "No quiero que dejen de mandarme", "Non voglio che smettiate".
KEEP_WANTED = re.compile(
    r"\b(?:(?:don'?t|do\s+not)\s+want|no\s+quiero\s+que|nao\s+quero\s+que|ne\s+veux\s+pas\s+que"
    r"|(?:will|mochte)\s+nicht\s*,?\s+dass|non\s+voglio\s+che|wil\s+niet\s+dat)\b"
    r".{0,40}\b(?:stop|dej|par[ae]|arret|cess|aufhor|smett|stopp)\w*"
)
#: Wanting fewer messages is not wanting none ("I just want fewer emails").
FEWER = re.compile(r"\b(?:fewer|less\s+often|menos|moins|weniger|meno|minder|seltener)\b")
#: A negation right before a wording turns it around ("Don't remove me from the list",
#: "No me borren de la lista", "Non toglietemi dalla lista").
NEGATED = re.compile(
    r"\b(?:don'?t|do\s+not|never|no|nao|non|ne|niet|nicht)\s+(?:me\s+|mi\s+|m'|nos\s+)?$"
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
    rf"(?=\s*$|\s+(?:to\s+)?(?:me|us|this\s+(?:number|email|address)|my\s+(?:inbox|phone|number))\b"
    rf"|\s+(?:these|those|the|your|this|any|all|such)?\s*(?:{_EN_THINGS})\b)",
    # es: dejen de enviarme / deja de escribirme
    r"\b(?:dej|par)(?:en|a|e|ad|ar)\s+de\s+(?:enviar|escribir|mandar|contactar|llamar|molestar|textear"
    r"|acosar)(?:me|nos)?\b",
    # pt: parem de me enviar mensagens / pare de me mandar
    r"\b(?:par|deix)(?:e|em|ar|a)\s+de\s+(?:me\s+)?(?:enviar|mandar|contatar|contactar|ligar|escrever"
    r"|perturbar|incomodar|chamar|encher)\b",
    r"\b(?:parar|deixar)\s+de\s+receber\s+(?:\w+\s+)?(?:mensagens|emails|e-mails|sms|msgs?|newsletters?)",
    # fr: arrêtez de m'envoyer
    r"\b(?:arret|cess)(?:ez|e|er|iez)\s+(?:de\s+|d')\s*(?:m'|me\s+|nous\s+)?\s*(?:envoyer|ecrire|contacter"
    r"|appeler|spammer|harceler|relancer|solliciter|deranger)",
    r"\barret(?:ez|e|er)\s+(?:les|vos|ces|tous\s+ces)\s+(?:messages|mails|e-mails|emails|sms|envois"
    r"|relances|appels)\b",
    # de: hören Sie auf, mir zu schreiben
    r"\b(?:hor(?:en|t)?\s+(?:sie\s+|ihr\s+)?(?:endlich\s+|bitte\s+)?auf|aufhor\w*)\s*,?\s+"
    r"(?:\w+\s+){0,4}(?:zu\s+(?:schreiben|schicken|senden|mailen|kontaktieren|nerven|belastigen|simsen"
    r"|anrufen)|(?:an|anzu|zu)(?:rufen|schreiben|mailen)|anzuschreiben)",
    r"\bhor(?:en|t)?\s+(?:sie\s+|ihr\s+)?(?:endlich\s+|bitte\s+)?auf\s+mit\s+(?:den\s+|diesen\s+"
    r"|ihren\s+|euren\s+|dem\s+)?(?:nachrichten|mails|e-mails|sms|anrufen|werbung|spam|mist)",
    # it: smettete di scrivermi
    r"\b(?:smett|cess)\w*\s+di\s+(?:scriver|contattar|mandar|inviar|chiamar|disturbar|spammar)(?:mi|ci|e)\b",
    # nl: stop met mailen
    r"\b(?:stop|stoppen|stopt|hou|houd|houdt|kap|kappen)\s+(?:nu\s+|eens\s+|aub\s+|alsjeblieft\s+"
    r"|alstublieft\s+|graag\s+|toch\s+)?(?:op\s+)?met\s+"
    r"(?:(?:me|mij|ons)\s+te\s+)?(?:mailen|e-mailen|sms'?en|appen|bellen|spammen|het\s+sturen|sturen"
    r"|(?:die\s+|deze\s+|jullie\s+|je\s+|uw\s+)?(?:berichten|mails|e-mails|sms'?jes|spam|appjes"
    r"|telefoontjes|nieuwsbrieven)|contact\s+(?:op\s+)?(?:te\s+)?opnemen)\b",
    # unsubscribe / opt out (the words themselves, not "unsubscribed")
    r"\b(?:unsubscribe|optout)\b",
]
PHRASES = [
    # not wanting what the sender sends: "i dont want these texts anymore", "Je ne veux plus de
    # vos messages", "Ich möchte Ihre Angebote nicht mehr erhalten"
    rf"\b(?:{_WANT_NOT})\b(?:\W+\w+){{0,5}}?\W+(?:{_CONTENT})\b",
    rf"\b(?:mochte|will|wollen|wil|willen|wens)\s+(?:\w+\s+){{0,2}}(?:{_CONTENT})\s+(?:\w+\s+)?"
    r"(?:nicht\s+mehr|niet\s+meer)\b",
    # never again: "Nie wieder Mails", "Plus jamais de mails", "Mai più email", "no more please"
    rf"\b(?:never\s+again|nie\s+wieder|plus\s+jamais|mai\s+piu|nooit\s+meer|nunca\s+mais|nunca\s+mas)"
    rf"\s+(?:(?:me|m')\s*)?(?:\w+\s+)?(?:de\s+|d')?(?:{_CONTENT})\b|^\s*no\s+more\s*(?:please|pls|thanks)?\W*$",
    # my data, deleted (GDPR requests): "Ik verzoek u mijn gegevens te verwijderen"
    r"\b(?:my\s+(?:data|details|personal\s+data)|mijn\s+gegevens|meine\s+daten|mes\s+donnees"
    r"|i\s+miei\s+dati|mis\s+datos|(?:os\s+)?meus\s+dados)\s+(?:\w+\s+){0,2}(?:te\s+)?(?:verwijderen"
    r"|loschen|supprimer|cancellare|eliminare|eliminar|borrar|apagar|excluir|delete|erase|remove)",
    # still contacted after asking: "Why are you still emailing me?", "Warum schreiben Sie mir
    # immer noch?", "Por que me siguen escribiendo?", "Waarom blijven jullie mailen?"
    r"\b(?:why|por\s*que|pourquoi|warum|perche|waarom)\b.{0,40}\b(?:still|siguen|seguis|continuam"
    r"|continuez|immer\s+noch|noch\s+immer|continuate|blijven)\b"
    r"|\b(?:you'?re|you\s+are|u\s+r)\s+still\s+(?:emailing|texting|messaging|contacting|sending|calling)",
    r"\basked\s+(?:you\s+)?to\s+be\s+(?:removed|unsubscribed|taken\s+off)|\bpedi\s+(?:la\s+)?baja\b"
    r"|\bpedi\s+(?:pra|para)\s+(?:sair|ser\s+removid|parar)|\bdemande\s+a\s+etre\s+(?:desinscrit|retire"
    r"|supprime)|\bchiesto\s+(?:la\s+disiscrizione|di\s+essere\s+(?:rimoss|cancellat|tolt))",
    r"\b(?:refrain|abstain)\s+from\s+(?:contacting|emailing|messaging|texting|calling|sending)"
    r"|\bdiscontinue\s+(?:all\s+|any\s+)?(?:\w+\s+)?(?:messages|contact|emails|texts|communications?"
    r"|calls)\b|\bno\s+further\s+(?:contact|messages|emails|texts|communications?)\b"
    r"|\b(?:do\s+not|don'?t|no\s+longer)\s+wish\s+to\s+be\s+(?:contacted|emailed|called|texted|messaged)",
    # this number / my address deleted, in any language: "Löschen Sie diese Nummer", "Effacez ce
    # numéro", "Eliminen este numero" (not "my old address": nothing may stand between)
    r"\b(?:remove|delete|erase|elimin\w*|borr\w*|apag\w*|exclu\w*|remov\w*|retir\w*|supprim\w*"
    r"|effac\w*|enlev\w*|losch\w*|entfern\w*|streich\w*|cancell\w*|rimuov\w*|togli\w*|verwijder"
    r"|schrap)\s+(?:sie\s+)?(?:this|este|esta|esse|essa|ce|cette|diese|dieser|diesen|questo|questa|dit"
    r"|deze)\s+(?:number|numero|nummer|email|e-mail|mail|correo|adresse|address|direccion|endereco"
    r"|indirizzo|adres|e-mailadres)\b",
    # having asked already: "je demande d'arrêter", "Ich habe gebeten aufzuhören"
    r"\b(?:demande|demander)\s+d'arreter|\basked\s+(?:you\s+)?to\s+stop\b|\bpedi\s+(?:pra|para)\s+parar"
    r"|\bgevraagd\s+om\s+te\s+stoppen|\bchiesto\s+di\s+smettere|\bgebeten\s+aufzuhoren",
    r"\bstell\w*\s+(?:sie\s+)?(?:\w+\s+){0,2}(?:zusendungen?|nachrichten|mails|e-mails|werbung|sms|anrufe"
    r"|newsletter)\s+ein\b",
    # remove me / take me off your list / delete my number
    rf"\b(?:remove|delete|erase|drop|scratch)\s+(?:me|us|(?:my|this)\s+(?:number|name|email|e-mail"
    rf"|email\s+address|address|details|info|information|data|contact(?:\s+info)?|phone(?:\s+number)?))"
    rf"(?=\s*(?:please|pls|now|thanks|thank\s+you|asap)?\s*(?:$|,\s*(?:gdpr|thanks|thank\s+you))|\s+(?:from|off|out\s+of)\s+(?:\w+\s+){{0,2}}(?:{_LIST})\b)",
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
    r"\bremove\s+(?:me|us)\s+from\s+(?:all\s+)?(?:future\s+)?(?:communications?|mailings?|emails?"
    r"|messages?)\b|\bmy\s+(?:email|e-mail|number|details|data|address|info)\s+(?:\w+\s+)?"
    r"(?:removed|deleted|erased|taken\s+off)\b",
    r"\bopt\s+(?:me|us)\s+out\b|\btake\s+(?:me|us)\s+off\s*(?:please|pls|thanks|now)?\s*$",
    # "I'll report this as spam if you don't stop emailing me"
    r"\bif\s+(?:you|u)\s+(?:don'?t|do\s+not)\s+stop\b",
    r"\b(?:do\s+not|don'?t|never)\s+(?:ever\s+)?(?:contact|text|txt|message|msg|email|e-mail|mail|call"
    r"|reach\s+out\s+to|write\s+to)\s+(?:me|us|this\s+(?:number|email|address|phone))\s+(?:\w+\s+)?"
    r"(?:again|anymore|any\s+more|ever)\b",
    # es
    r"\b(?:dame|denme|darme|darnos|den|dar|doy|dan)\s+de\s+baja\b",
    r"\bno\s+(?:me|nos)\s+(?:vuelva[ns]?\s+a\s+)?(?:escrib|envi|mand|contact|llam|molest|text)\w*+"
    r"(?!\s+(?:antes|despues|hasta|por\s+la|en\s+la|a\s+las|hoy|ahora|manana|el|a\s+est[eao]|aqui"
    r"|por\s+aqui)\b)",
    r"\bno\s+(?:me\s+|nos\s+)?(?:escrib|envi|mand|contact|llam|molest|text)\w*\s+(?:\w+\s+)?mas\b",
    r"\bno\s+vuelva[ns]?\s+a\s+(?:escrib|envi|mand|contact|llam|molest)\w*(?:me|nos)\b",
    r"\bno\s+(?:quiero|deseo|queremos)\s+que\s+(?:me|nos)\s+(?:escrib|envi|mand|contact|llam|molest)",
    r"\bno\s+(?:enviar|mandar)\s+mas\s+(?:mensajes|correos|emails|sms|publicidad)\b",
    r"\b(?:ya\s+)?basta\s+(?:ya\s+)?de\s+(?:mensajes|correos|emails|llamadas|sms|spam|publicidad)\b",
    r"\b(?:elimin|borr|quit|sac|saq|remuev|retir|tir|remov|exclu)\w*\s+(?:(?:me|nos|mi|meu|o\s+meu|minha)"
    r"\s+(?:\w+\s+)?)?(?:de|del|da|do|dessa|desta)\s+(?:\w+\s+){0,2}(?:lista|listas|base|cadastro"
    r"|contactos|contatos)\b",
    r"\b(?:elimin|borr)\w*\s+(?:mis\s+datos|mi\s+(?:numero|correo|email|contacto|telefono))\b",
    rf"\bno\s+(?:quiero|deseo|queremos)\s+(?:recibir\s+)?(?:mas|ningun\w*)\s*(?:$|nada\b|de\s+(?:ustedes"
    rf"|usted|su|sus|vuestr\w*)\b|(?:{_CONTENT})\b)",
    r"\b(?:don'?t|do\s+not)\s+want\s+any\s*more\s+of\s+(?:these|this|those|your)\b",
    r"\bno\s+mas\s+(?:mensajes|correos|emails|llamadas|sms)\b",
    r"\bcancelar\s+(?:la\s+|mi\s+|a\s+|minha\s+)?(?:suscripcion|subscripcion|inscricao|subscricao"
    r"|assinatura)\b",
    # not the past ("Me descadastrei sem querer")
    r"\bdesuscrib(?!i\b|io\b|imos\b)\w*|\bdescadastr(?!ei\b|ou\b|amos\b|aram\b|ado\b)\w*",
    r"\bdej(?:en|a|ad)?me\s+en\s+paz\b|\bdejenme\s+tranquil",
    # pt
    r"\bnao\s+(?:me\s+)?(?:envi|mand|contat|contact|lig|escrev|perturb|incomod|cham)\w*\s+"
    r"(?:(?:nem|e|ou)\s+\w+\s+)?(?:\w+\s+)?(?:mais|novamente|de\s+novo)\b",
    r"\bnao\s+quero\s+(?:mais\s+)?(?:ser\s+)?(?:contatad|contactad|incomodad|chamad)",
    r"\bsair\s+da\s+(?:sua\s+|vossa\s+|minha\s+)?lista\b|\bcancelar\s+o\s+recebimento\b",
    r"\b(?:exclu|remov|apag|delet|retir|tir)\w*\s+(?:o\s+|os\s+)?(?:meu|meus|minha)\s+(?:numero|contato"
    r"|contacto|email|e-mail|cadastro|telefone|dados)\b",
    r"\bnao\s+(?:me\s+)?(?:envi|mand)\w*\s+(?:mais\s+)?mensage",
    r"\bnao\s+(?:entre|entrem)\s+mais\s+em\s+contato\b",
    r"\bnao\s+quero\s+(?:mais\s+)?receber\b",
    r"\bquero\s+sair\s+da\s+lista\b",
    r"\b(?:exclu|remov|apag|delet)\w*\s+(?:o\s+)?meu\s+(?:numero|contato|email|cadastro|telefone)\b",
    r"\bme\s+deix[ae]m?\s+em\s+paz\b|\bdeix[ae]m?-?me\s+em\s+paz\b",
    r"\bchega\s+de\s+(?:mensagens|emails|sms|ligacoes|spam)\b",
    # fr
    r"\bdesabonnement\b|\bdesinscription\b|\bdesabonner\b|\bdesinscrire\b|\bdesabonnez\b"
    r"|\bdesinscrivez\b",
    r"\bne\s+(?:m'|me\s+)\s*(?:re)?(?:envoy|ecriv|contact|appel|ecri|envoi|sollicit|relanc|derang)\w*"
    r"\s+plus\b",
    r"\b(?:retir|supprim|enlev|effac|ray|oubli)(?:ez|er|e)[-\s]?(?:moi\b|mon\s+(?:numero|adresse|email"
    r"|e-mail|mail|contact|nom)|mes\s+(?:coordonnees|donnees))",
    r"\b(?:je\s+)?(?:ne\s+)?(?:veux|souhaite|desire)\s+plus\s+(?:recevoir|etre\s+(?:contacte|sollicite"
    r"|derange))",
    r"\bne\s+plus\s+recevoir\s+(?:\w+\s+)?(?:messages|mails|e-mails|emails|sms|courriels|newsletters?"
    r"|publicites|offres)\b|\brefuse\s+de\s+recevoir\b",
    r"\b(?:lach|fout|fich)(?:ez|e)[-\s]moi\s+(?:la\s+paix|la\s+grappe|tranquille)",
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
    r"\blass(?:en\s+sie|t)?\s+mich\s+(?:bitte\s+|endlich\s+|doch\s+)?in\s+ruhe\b",
    r"\b(?:nehm|streich|entfern|trag|losch)\w*\s+(?:sie\s+|ihr\s+)?(?:mich|uns|meine\s+(?:mail|e-mail"
    r"|adresse|nummer|daten))\s+(?:(?!nicht\b)\w+\s+){0,2}"
    r"(?:aus|von)\s+(?:\w+\s+)?(?:verteiler|\w*listen?|datenbank|kartei|newsletter|adressbuch)\b",
    r"\baus\s+dem\s+(?:\w+\s+)?(?:verteiler|newsletter)\s+(?:nehmen|streichen|entfernen|austragen)\b",
    r"\bmeine\s+(?:nummer|daten|adresse|e-mail(?:-adresse)?|emailadresse|kontaktdaten|telefonnummer)\s+"
    r"(?:\w+\s+){0,3}(?:loschen|entfernen)\b",
    r"\bnicht\s+mehr\s+(?:kontaktieren|anschreiben|schreiben|anrufen|mailen|kontaktiert|angeschrieben"
    r"|angerufen|belastigen|storen)\b",
    r"\b(?:schreib|schick|kontaktier|ruf|mail|sims)\w*\s+(?:sie\s+)?(?:mir\s+|mich\s+)?(?:\w+\s+)?"
    r"nicht\s+mehr\b|\bkeine\s+\w+\s+mehr\s+zu\s+(?:senden|schicken|schreiben|mailen)\b",
    r"\bn'(?:ecriv|envoy|appel|contact)\w*\s+plus\b|\bgeen\s+\w+\s+meer\s+te\s+(?:sturen|mailen|sms'?en)\b",
    r"\bkeine\s+weiteren?\s+(?:nachrichten|e-mails|emails|mails|sms|anrufe|werbung|kontaktaufnahmen?"
    r"|zusendungen|newsletter)\b",
    r"\bunterlassen\s+sie\s+(?:\w+\s+)?(?:kontaktaufnahmen?|kontakt|zusendungen|nachrichten|anrufe"
    r"|werbung)|\bwiderspreche\s+(?:\w+\s+){0,4}(?:daten|werbung|werbezwecke\w*|kontaktaufnahme)",
    # it
    r"\bcancellami\b|\bcancellatemi\b|\bdisiscriv\w*|\bdisiscrizione\b",
    r"\b(?:cancell|elimin|rimuov|togli|dimentic)\w*\s+(?:i\s+miei\s+(?:dati|contatti|recapiti)|il\s+mio"
    r"\s+(?:numero|indirizzo|contatto|nominativo)|la\s+mia\s+(?:email|e-mail|mail))\b",
    r"\bannull\w*\s+(?:l'|la\s+)?\s*iscrizione\b|\bnon\s+ricevere\s+piu\b",
    r"\bnon\s+(?:desidero|voglio|vogliamo)\s+(?:piu\s+)?(?:essere\s+)?(?:piu\s+)?(?:contattat|disturbat"
    r"|chiamat)",
    r"\bnon\s+(?:desidero|voglio)\s+(?:piu\s+)?ricevere\s+(?:piu|ulteriori|altr[ei]|nessun)",
    r"\bdiffid\w*\s+(?:\w+\s+)?(?:dal|a)\s+contattar|\bniente\s+piu\s+(?:messaggi|email|mail|sms)\b",
    r"\bnon\s+(?:mi\s+)?(?:scriv|contatt|mand|invi|chiam|disturb)\w*\s+(?:\w+\s+)?piu\b",
    r"\b(?:togli|rimuov|cancell)\w*\s+(?:\w+\s+){0,3}(?:dalla|dalle|dal|dai)\s+(?:vostra\s+|sua\s+)?"
    r"(?:lista|mailing|elenco|database|contatti)",
    r"\bnon\s+voglio\s+piu\s+ricevere\b",
    r"\b(?:essere\s+)?(?:rimoss|cancellat|tolt)[oaie]\s+(?:dalla|dalle|dal|dai)\s+(?:vostra\s+|sua\s+)?"
    r"(?:lista|mailing|elenco|database|contatti)",
    r"\bbasta\s+(?:con\s+(?:i|questi)\s+)?(?:messaggi|email|mail|sms|chiamate)\b",
    r"\blascia(?:te)?mi\s+(?:in\s+pace|stare)\b",
    # nl
    r"\buitschrijven\b|\bafmelden\b|\bschrijf\s+(?:me|mij|ons)\s+uit\b|\bmeld\s+(?:me|mij|ons)\s+af\b",
    r"\bstuur\s+(?:me|mij|ons)\s+(?:verder\s+|voortaan\s+|aub\s+)?(?:niks\s+|niets\s+|geen\s+(?:\w+\s+)?)meer\b",
    r"\bhaal\s+(?:me|mij|ons|mijn\s+[\w-]+)\s+(?:(?!niet\b)\w+\s+)?(?:uit|van|af)\s+(?:\w+\s+)?"
    r"(?:\w*lijst|bestand|database|systeem)\b",
    r"\b(?:me|mij|ons)\s+(?:uit|van)\s+(?:de|het|jullie|uw|je)\s+\w*(?:lijst|bestand)\s+(?:af\s+)?"
    r"(?:halen|verwijderen|schrappen|afhalen)\b|\bschrap\s+(?:me|mij|ons)\b",
    r"\b(?:bel|mail|app|sms|stuur|contacteer|benader)\w*\s+(?:(?:en|of)\s+\w+\s+)?(?:(?:me|mij|ons)\s+)?"
    r"(?:\w+\s+)?niet\s+meer\b",
    r"\bniet\s+meer\s+(?:benaderd|lastig\s*gevallen|gecontacteerd)\b|\bval\s+(?:me|mij|ons)\s+"
    r"(?:niet\s+meer\s+|niet\s+)lastig\b",
    r"\bgeen\s+verdere\s+(?:berichten|mails|e-mails|sms|contact|telefoontjes)\b",
    r"\bneem\s+(?:\w+\s+)?geen\s+contact\s+meer\b",
    r"\bhaal\s+(?:me|mij)\s+uit\s+(?:\w+\s+)?(?:bestand|lijst|database|mailinglijst)\b",
    r"\bverwijder\s+(?:mij|me|mijn\s+(?:nummer|gegevens|e-?mail|adres))\b",
    r"\bniet\s+meer\s+(?:ge)?(?:mail|bel|contact|sms|app|bericht)\w*",
    r"\bik\s+wil\s+geen\s+(?:\w+\s+)?meer\s+(?:ontvangen|krijgen)\b",
    r"\bgeen\s+(?:berichten|mails|e-mails|sms(?:jes)?|telefoontjes)\s+meer\b",
    r"\blaat\s+(?:me|mij)\s+(?:toch\s+|nou\s+|gewoon\s+|eens\s+)?met\s+rust\b",
]
