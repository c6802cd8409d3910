#!/usr/bin/env python3
"""Writes tests/chat/jinja_cases.json: templates, contexts and the output that jinja2 renders
with the environment transformers' apply_chat_template uses (trim_blocks, lstrip_blocks,
loop controls, its tojson filter, raise_exception, strftime_now). The C++ interpreter must match every case
byte for byte. Needs jinja2 3.1 (Debian's python3-jinja2 is 3.1.2; the committed file was
written with 3.1.6); run from the source root:

    /usr/bin/python3 tests/reference/gen_jinja_cases.py
"""
import json
import os
import random
import sys
from datetime import datetime

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise TemplateError(message)


def strftime_now(format):
    return datetime.now().strftime(format)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


ENV = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[loopcontrols])
ENV.filters["tojson"] = tojson
ENV.globals["raise_exception"] = raise_exception
ENV.globals["strftime_now"] = strftime_now

CHAT = [
    {"role": "system", "content": "  You are terse.  "},
    {"role": "user", "content": "Hello ünïcode \"quotes\" 'single'\n"},
    {"role": "assistant", "content": "<think>\nplan\n</think>\n\nHi!"},
    {"role": "user", "content": "Two?"},
]
NO_SYSTEM = CHAT[1:]

TEMPLATES = {
    # A reasoning-style ChatML template: namespace, reverse slice, split/strip methods.
    "thinking_chatml": """
{%- if messages[0].role == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- set ns = namespace(last_user=messages|length - 1, found=false) %}
{%- for m in messages[::-1] %}
    {%- if not ns.found and m.role == 'user' %}
        {%- set ns.last_user = (messages|length - 1) - loop.index0 %}
        {%- set ns.found = true %}
    {%- endif %}
{%- endfor %}
{%- for m in messages %}
    {%- if m.role == 'user' or (m.role == 'system' and not loop.first) %}
        {{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}
    {%- elif m.role == 'assistant' %}
        {%- set content = m.content %}
        {%- if '</think>' in content %}
            {%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
        {%- endif %}
        {%- if loop.index0 > ns.last_user %}
            {{- '<|im_start|>assistant\\n<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n' + content }}
        {%- else %}
            {{- '<|im_start|>assistant\\n' + content }}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}
""",
    # Header-style template with a system block extracted first and tools as indented JSON.
    "headers_tools": """{{- bos_token }}
{%- if not date_string is defined %}
    {%- set date_string = "01 Jan 2026" %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{%- if tools is defined and tools is not none %}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message + "<|eot_id|>" }}
{%- for message in messages %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
""",
    # Alternation check with raise_exception, role renaming, trim filter.
    "turns_strict": "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}",
    # Whitespace rules: trim_blocks, lstrip_blocks, explicit markers, {%+ and comments.
    "whitespace": "A\n  {% if true %}\n    B {{ 1 }}  \n  {% endif %}\nC {# note #}\n  {#- gone -#}  D\n{%+ if true %}E{% endif %}\n{{- ' F ' -}}\n   G\n{% for i in range(3) -%}\n  [{{ i }}]\n{%- endfor %}\nH",
    # Python str() of values and operators.
    "values": "{{ [1, 'a', none, true, 1.5, {'k': 'v'}] }}|{{ none }}|{{ true }}|{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 * 3.0 }}|{{ 'ab' * 3 }}|{{ 1 ~ 'x' ~ none }}|{{ 'y' if false }}|{{ 'n' if 0 else 'z' }}|{{ 1e20 }} {{ 0.0001 }} {{ 0.00001 }} {{ 123456789.125 }} {{ 1.0e16 }}|{{ \"it's\" }}|{{ ['it\\'s', \"q\\\"\"] }}|{{ undefined_thing }}|{% for a, b in [(1, 2)] %}{{ a }}{{ b }}{% endfor %}",
    # Loops: loop.*, break/continue, for-else, loop filter, unpacking, dict iteration.
    "loops": "{% for x in items if x != 3 %}{{ loop.index }}/{{ loop.length }}:{{ x }}{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}{% if x == 5 %}{% break %}{% endif %}{% if x is even %}{% continue %}{% endif %}!{% endfor %}|{% for x in [] %}no{% else %}empty{% endfor %}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|{% for c in 'héllo' %}{{ c }}.{% endfor %}|{% for x in items %}{% set y = x * 2 %}{% endfor %}{{ y }}",
    # Filters and methods.
    "filters": "{{ names | join(', ') }}|{{ people | map(attribute='name') | join('+') }}|{{ people | selectattr('age', 'odd') | map(attribute='name') | list }}|{{ people | rejectattr('name', 'equalto', 'bo') | list | length }}|{{ missing | default('dflt') }}|{{ '' | default('e', true) }}|{{ names | first }}{{ names | last }}|{{ 'hello world' | title }} {{ 'ABC' | lower }} {{ 'x' | upper }} {{ 'hi there' | capitalize }}|{{ 'a-b-c' | replace('-', '+') }}|{{ '42' | int + 1 }} {{ '2.5' | float }} {{ 2.567 | round(2) }} {{ -3 | abs }}|{{ [3,1,3,2] | unique | list }}|{% for k, v in {'b': 1, 'a': 2} | dictsort %}{{ k }}{{ v }}{% endfor %}|{{ '  pad  ' | trim }}|{{ names | reverse | list }}|{{ 'a,b,,c'.split(',') }} {{ ' x  y '.split() }} {{ 'k=v=w'.split('=', 1) }}|{{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('bc') }} {{ 'aXbX'.replace('X', '') }} {{ 'banana'.count('an') }} {{ 'hay'.find('y') }}|{{ d.get('a') }} {{ d.get('zz', 'none!') }} {{ d.keys() | list }} {{ d.values() | list }}|{{ names[1:] }} {{ names[:-1] }} {{ names[::2] }} {{ 'abcdef'[1:4] }} {{ 'abcdef'[::-1] }} {{ names[-1] }}|{{ names | length }} {{ 'héllo' | length }} {{ d | length }}|{{ d | tojson }} {{ people | tojson(indent=2) }}",
    # Tests.
    "tests": "{% for v in [1, 2.5, 'x', none, true, [1], {'a': 1}] %}{{ v is number }}{{ v is string }}{{ v is none }}{{ v is mapping }}{{ v is iterable }}{{ v is sequence }}{{ v is boolean }}{{ v is integer }}{{ v is float }};{% endfor %}|{{ 6 is divisibleby 3 }} {{ 7 is divisibleby(3) }} {{ x is defined }} {{ nope is undefined }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ 3 is odd }} {{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'cat' }}",
    # Macros, set blocks, namespaces updated in loops.
    "macros": "{% macro tag(name, body='?') %}<{{ name }}>{{ body }}</{{ name }}>{% endmacro %}{{ tag('a', 'x') }}{{ tag('b') }}{{ tag(name='c', body='y') }}|{% set block %}inner {{ 1 + 1 }}{% endset %}{{ block }}|{% set ns = namespace(total=0, names='') %}{% for p in people %}{% set ns.total = ns.total + p.age %}{% set ns.names = ns.names + p.name %}{% endfor %}{{ ns.total }} {{ ns.names }}",
    # The global functions are names like any other (Llama 3.x templates ask
    # `strftime_now is defined` before calling it); a variable hides one. The year's length
    # keeps the case independent of the date.
    "globals": "{{ strftime_now is defined }} {{ raise_exception is defined }} {{ namespace is callable }} {{ range is defined }} {{ dict is defined }} {{ nothing is defined }}|{% if strftime_now is defined %}{% set year = strftime_now('%Y') %}{% endif %}{{ year | length }}|{% set range = 'shadowed' %}{{ range }} {{ range is callable }}",
    # String literals decode Python escapes (Mistral Small 3.1 continues strings over lines).
    "percent_format": "{{ '%s is %d years, %.1f%%' % ('Ann', 30.9, 99.44) }}|{{ '%(name)s: %(n)05d' % {'name': 'x', 'n': -12} }}|{{ '%s' % {'a': 1} }}|{{ '%s' % [1, 2] }}|{{ 'plain' % [1] }}|{{ '%*d|%-*s|%.*f' % (5, 42, 4, 'ab', 2, 3.14159) }}|{{ '%#o %#x %#X %o' % (8, 0, 255, -8) }}|{{ '%c%c' % (233, 'z') }}|{{ '%.2s|%5.1s|%-4r|' % ('h\u00e9llo', '\u00e9t\u00e9', 'a') }}|{{ '%+.3e % g %G' % (12345.678, 0.00001, 1e20) }}|{{ '%(a)s %(b)s' | format(a=1, b='q') }}|{{ '%s-%s' | format('x', none) }}|{{ '%ld %hi %5%%' % (1, 2) if false else '%%' % () }}|{{ '%.*f|%.*s|%*s|%.12f' % (-1, 2.5, -2, 'abc', -3, 'a', 0.1) }}",
    "brace_format": "{% set d = {'a': 1, 'b': 'x'} %}{% set l = [1, 2] %}{{ '{0}{1}{0}|{x}-{y!r}|{0[a]}{0.b}{1[1]}{0.zz}'.format(d, l, x=1, y='q') }}|{{ '{:{w}.{p}f}|{:,}|{:_x}|{:^9}|{:=+8}|{:>5}|{:08,}|{:.3}|{:.0}|{:#.3}|{{}}'.format(2.5, 1234567, 1234567, 'mid', -42, true, 1234, 100.0, 2.5, 1e16, w=10, p=3) }}",
    "brace_error_switch": "{{ '{}{1}'.format(1, 2) }}",
    "brace_error_spec": "{{ '{:d}'.format('x') }}",
    "brace_error_index": "{{ '{2}'.format(1) }}",
    "percent_error_type": "{{ '%d' % 'x' }}",
    "percent_error_few": "{{ '%s %s' % ('a',) }}",
    "percent_error_many": "{{ '%s' % ('a', 'b') }}",
    "percent_error_key": "{{ '%(missing)s' % {'a': 1} }}",
    "escapes": "{{ 'a\\\nb' }}|{{ 'A\\x42\\u00e9\\101\\U0001F600' }}|{{ '\\a\\b\\f\\v\\q\\0' }}|{{ \"it\\'s \\\"q\\\"\" }}",
    # |safe gives Markup: `+` escapes the plain side (functionary's tool list), `~` does not;
    # indent; {% filter %} blocks (firefunction); `in` an undefined; select / map on none.
    "markup_indent_filter": "{{ 'a'|safe + '<b>\"' }}|{{ '<b>' + 'a'|safe }}|{{ 'x: '|safe + d|tojson }}|{{ 'a'|safe ~ '<b>' }}|{{ '<&>'|e }}{{ '<'|e|e }}|{{ 'a\\nb\\nc'|indent(4) }}|{{ 'x\\n\\ny'|indent(2, first=true) }}|{{ 'p\\n\\nq'|indent(2, true, true) }}|{{ 'a\\nb'|indent('> ') }}|{{ ''|indent(2, true) }}|{{ 'a\\n'|indent }}|{% filter upper %}ab{{ x }}{% endfilter %}|[{% filter trim %}  hi  {% endfilter %}]|{% filter indent(2) | upper %}a\nb{% endfilter %}|{{ 'a' in nope }} {{ 'a' not in nope }}|{{ none|selectattr('type', 'equalto', 'a')|list }}{{ none|map(attribute='a')|list }}{{ ''|select|list }}",
    # An attribute of an undefined value raises, as jinja2's Undefined does.
    "undefined_attribute": "{{ d.missing }}|{{ nope.attr }}",
    "error_alternation": "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate') }}{% endif %}{{ message['content'] }}{% endfor %}",
}

CONTEXTS = {
    "chat": {"messages": CHAT, "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>"},
    "chat_no_system": {"messages": NO_SYSTEM, "add_generation_prompt": False, "bos_token": "<bos>", "eos_token": "<eos>"},
    "chat_thinking_off": {"messages": NO_SYSTEM, "add_generation_prompt": True, "enable_thinking": False, "bos_token": "", "eos_token": ""},
    "chat_tools": {"messages": CHAT, "add_generation_prompt": True, "bos_token": "<|begin_of_text|>",
                   "tools": [{"name": "get_weather", "parameters": {"city": {"type": "string"}, "days": [1, 2.5, None, True], "note": "é\n\"x\"\x7f\b\x01"}}, {"e": [], "f": {}}]},
    "data": {"items": [1, 2, 3, 4, 5, 6], "d": {"b": 2, "a": 1}, "names": ["al", "bo", "cy"], "x": 1,
             "people": [{"name": "al", "age": 3}, {"name": "bo", "age": 4}, {"name": "cy", "age": 5}]},
}

TEMPLATES["macros_args_unpack"] = """
{%- macro m(a, b=2) %}[{{ a }}|{{ b }}|{{ varargs | list }}|{{ kwargs | tojson }}]{% endmacro %}
{{- m(1) }}{{ m(1, 3) }}{{ m(a=5, b='x') }}{{ m(b=0, a=9) }}{{ m(1, 2, 3, 4) }}{{ m(1, z=2) }}
{%- set a, b = [1, 2] %}{{ b }}{{ a }}{% set c, d = 'xy' %}{{ d }}{{ c }}
{%- for k, v in {'b': 1, 'a': 2} | dictsort(by='value', reverse=true) %}{{ k }}{{ v }}{% endfor %}
"""

# {% with %} and {% call %} (a caller's body sees its call site's names, not the macro's).
TEMPLATES["with_call"] = """
{%- set a = 5 %}{% with a = 1, b = a %}{{ a }}{{ b }}{% set c = 3 %}{% endwith %}{{ a }}{{ c is defined }}
{%- for i in items %}{% with x = i %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endwith %}{% endfor %}
{%- macro wrap(x=9) %}<{{ caller() }}|{{ x }}>{% endmacro %}{% for x in [1, 2] %}{% call wrap() %}{{ x }}{% endcall %}{% endfor %}
{%- macro each(list) %}{% for i in list %}[{{ caller(i, loop.index) }}]{% endfor %}{% endmacro %}
{%- call(name, n) each(names) %}{{ n }}{{ name | upper }}{% endcall %}
{%- macro outer() %}({{ caller() }}){% endmacro %}{% call outer() %}{% call outer() %}in{% endcall %}out{% endcall %}
{%- macro probe() %}{{ caller is defined }}{% endmacro %}{{ probe() }}
"""

# Filters that group, cut and quote, and attribute paths ("a.b.0") in the filters that take one.
TEMPLATES["group_filters"] = """
{{- items | batch(4) | list }}|{{ items | batch(4, 'x') | list }}|{{ items | batch(0) | list }}|{{ items | slice(4) | list }}|{{ items | slice(4, 0) | list }}|{{ items | slice(-1) | list }}|{{ names | slice(5) | list }}
{%- for g in towns | groupby('city') %}[{{ g.grouper }}:{{ g.list | map(attribute='name') | join(',') }}]{% endfor %}
{%- for city, people in towns | groupby('city', case_sensitive=true) %}[{{ city }}:{{ people | length }}]{% endfor %}
{%- for g in towns | groupby('home.floor', default=0) %}[{{ g.grouper }}:{{ g.list | length }}]{% endfor %}
{{- (towns | groupby('city') | first).grouper }}{{ (towns | groupby('city'))[1].list | length }}{{ towns | groupby('city') | map(attribute='grouper') | list }}
{{- towns | map(attribute='home.floor') | list }}{{ towns | map(attribute='tags.0', default='-') | list }}{{ towns | selectattr('home.floor') | map(attribute='name') | join }}
{{- towns | sort(attribute='home.floor') | map(attribute='name') | join }}{{ towns | sum(attribute='home.floor') }}{{ towns | join('/', attribute='tags.1') }}
{{- names | map('upper') | list }}{{ names | map('replace', 'a', '@') | list }}{{ [1.26, 2.5] | map('round', 1) | list }}{{ [[1, 2], [3]] | map('join', '+') | list }}{{ names | map('center', 4) | list }}
"""
TEMPLATES["text_filters"] = """
{{- s | truncate(9) }}|{{ s | truncate(9, true) }}|{{ s | truncate(20, end='!') }}|{{ s | truncate(19, leeway=0) }}|{{ s | truncate(24, leeway=0) }}|{{ s | truncate(3, true) }}|{{ 'ab cd' | truncate(3, false, '..', 0) }}|{{ nope | truncate }}|{{ u | truncate(5, true, '…', 0) }}
{{- 'x' | center(6) }}|{{ 'ab' | center }}|{{ u | center(12) }}|{{ s | center(3) }}
{{- d | urlencode }}|{{ 'a b/c?d=é&~' | urlencode }}|{{ [['k', 'v w'], ['x', 2]] | urlencode }}|{{ 42 | urlencode }}|{{ nope | urlencode }}|{{ none | urlencode }}
{{- 1 | filesizeformat }} {{ 0 | filesizeformat }} {{ 999 | filesizeformat }} {{ 1000 | filesizeformat }} {{ 1023 | filesizeformat(true) }} {{ 1024 | filesizeformat(true) }} {{ 123456789 | filesizeformat }} {{ 1e30 | filesizeformat }} {{ '2048' | filesizeformat(binary=true) }} {{ -5.5 | filesizeformat }} {{ -0.5 | filesizeformat }} {{ 1e24 | filesizeformat }} {{ 999999 | filesizeformat }} {{ 1.5 | filesizeformat }} {{ (2 ** 62) | filesizeformat(true) }} {{ 1e27 | filesizeformat(true) }}
{{- d | xmlattr }}|{{ d | xmlattr(false) }}|{{ {} | xmlattr }}|{{ {"q'": '<"x>'} | xmlattr }}
{{- '<a>' | forceescape }}|{{ '<a>' | e | forceescape }}|{{ '<a>' | safe | forceescape }}|{{ ('<a>' | forceescape) is escaped }} {{ 'x' is escaped }} {{ 'x' | safe is escaped }}
{{- 'upper' is filter }} {{ 'nope' is filter }} {{ 'wordwrap' is filter }} {{ 1 is filter }} {{ 'defined' is test }} {{ 'upper' is test }} {{ 'map' is test }} {{ '==' is test }}
{{- 'abcabc'.rfind('b') }} {{ 'abc'.rfind('z') }} {{ 'abcabc'.index('c') }} {{ 'abcabc'.rindex('c') }} {{ 'x'.ljust(4, 'é') }} {{ 'x'.rjust(3) }} {{ '-7'.zfill(4) }} {{ '+7'.zfill(1) }} {{ '7'.zfill(3) }} {{ ''.zfill(2) }} {{ 'ab'.center(5, '*') }} {{ 'abc'.center(6) }}
"""
TEMPLATES["wordwrap"] = "{{ s | wordwrap(10) }}|{{ s | wordwrap(5, false) }}|{{ 'well-known re-entry--yes' | wordwrap(6, wrapstring='<br>') }}|{{ 'well-known' | wordwrap(6, true, none, false) }}|{{ '' | wordwrap(0) }}"
TEMPLATES["wordwrap_error"] = "{{ 'x' | wordwrap(0) }}"
TEMPLATES["truncate_error"] = "{{ 'long enough text' | truncate(2) }}"
TEMPLATES["slice_error"] = "{{ [1, 2] | slice(0) | list }}"
TEMPLATES["xmlattr_error"] = "{{ {'a b': 1} | xmlattr }}"
TEMPLATES["urlencode_error"] = "{{ [['a', 1, 2]] | urlencode }}"
TEMPLATES["center_error"] = "{{ 'abc'.center(5, 'ab') }}"
TEMPLATES["index_error"] = "{{ 'abc'.index('z') }}"
TEMPLATES["filesize_error"] = "{{ 'x' | filesizeformat }}"
CONTEXTS["filters"] = {
    "items": [1, 2, 3, 4, 5, 6, 7], "names": ["ann", "bob", "cy"], "s": "Hello wide world of text",
    "u": "ünï cödé wörds", "d": {"q": "a b&c", "n": 1, "z": None, "t": True},
    "towns": [{"name": "al", "city": "Oslo", "home": {"floor": 2}, "tags": ["x", "y"]},
              {"name": "bo", "city": "Rome", "home": {"floor": 1}, "tags": ["z", "w"]},
              {"name": "cy", "city": "oslo", "home": {"floor": 2}, "tags": ["v", "u"]}]}

# Tool turns in the way Hermes / Qwen 2.5 templates write them (written here): the tools listed
# with tojson, an assistant's calls (function re-bound, arguments as a dict through tojson, None
# content), consecutive tool results gathered in one user turn by looking at neighbours.
TEMPLATES["tool_turns"] = """
{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
    {{- "Tools:\\n<tools>" }}
    {%- for tool in tools %}{{- "\\n" }}{{- tool | tojson }}{%- endfor %}
    {{- "\\n</tools><|im_end|>\\n" }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "user" or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>assistant' }}
        {%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' + tool_call.name + '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.index0 == 0 or messages[loop.index0 - 1].role != "tool" %}{{- '<|im_start|>user' }}{%- endif %}
        {{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != "tool" %}{{- '<|im_end|>\\n' }}{%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""
CONTEXTS["chat_tool_turns"] = {
    "add_generation_prompt": True, "bos_token": "", "eos_token": "",
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Oslo and Rome?"},
                 {"role": "assistant", "content": None, "tool_calls": [
                     {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
                     {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome", "ünits": [1, 2.5, None]}}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "-3 C"},
                 {"role": "tool", "tool_call_id": "call_2", "content": "14 C"},
                 {"role": "assistant", "content": "Cold; mild."}, {"role": "user", "content": "Thanks"}]}
CASES_EXTRA = [("tool_turns", "chat_tool_turns"), ("tool_turns", "chat")]

CASES = [
    ("thinking_chatml", "chat"), ("thinking_chatml", "chat_thinking_off"),
    ("headers_tools", "chat"), ("headers_tools", "chat_tools"), ("headers_tools", "chat_no_system"),
    ("turns_strict", "chat_no_system"), ("turns_strict", "chat"),
    ("whitespace", "data"), ("values", "data"), ("loops", "data"), ("filters", "data"),
    ("tests", "data"), ("macros", "data"), ("globals", "data"), ("escapes", "data"),
    ("markup_indent_filter", "data"), ("undefined_attribute", "data"),
    ("error_alternation", "chat"), ("macros_args_unpack", "data"), ("percent_format", "data"),
    ("percent_error_type", "data"), ("percent_error_few", "data"), ("percent_error_many", "data"),
    ("percent_error_key", "data"), ("brace_format", "data"), ("brace_error_switch", "data"),
    ("brace_error_spec", "data"), ("brace_error_index", "data"),
    ("with_call", "data"), ("group_filters", "filters"), ("text_filters", "filters"),
    ("truncate_error", "data"), ("slice_error", "data"), ("xmlattr_error", "data"),
    ("urlencode_error", "data"), ("center_error", "data"), ("index_error", "data"),
    ("filesize_error", "data"), ("wordwrap", "filters"), ("wordwrap_error", "data"),
]


# Random expressions (fixed seed) over values of every type, non-ASCII text included: operators
# with Python's semantics (bool as int, ** as jinja2 groups it, floor division and modulo of
# negatives), the filters, tests and str methods templates use, indexing and slicing by
# character, casing of any script. Only what jinja2 renders is kept, in chunks of 25 per case.
# Left out on purpose (the interpreter differs, see lib/chat/jinja.h): tuples and the
# dict_items / generator objects that jinja2 prints by repr, Undefined inside printed lists, a
# sign right before `**` (jinja2's code generator and its constant folding disagree there).
EXPRESSION_CONTEXT = {
    "n": 7, "z": 0, "f": 2.5, "g": -0.1, "s": "Hello World", "e": "", "u": "héllo wörld ΟΔΟΣ ǆemal",
    "w": "ﬁne straße  İstanbul\tΣ.", "l": [3, 1, 2], "ls": ["b", "A", "c", "é"], "d": {"b": 1, "a": 2},
    "c": "tab\there\x00 nbsp\xa0 zw\u200b 'q' \\ é\u3000🦙\U000e0001", "t": True, "fl": False, "none": None,
    "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "name": "bot"}]}
ATOMS = ["n", "z", "f", "g", "s", "e", "u", "w", "c", "[c]", "{'k': c, c: 'v'}", "l", "ls", "d",
         "t", "fl", "none", "msgs",
         "0", "1", "2", "3", "-4", "10", "0.5", "2.0", "1e3", "0.1", "'a'", "'abc'", "''", "'x y z'",
         "'é'", "'ÉCOLE'", "'A,B'", "[1, 2]", "[]", "['x', 'Y']", "{'k': 1}", "{}", "true", "false",
         "none", "'42'", "'3.5'", "' pad '", "'ǅ'", "'²3'", "'٣'", "'12abc'", "' 1_000 '",
         "'1e3'", "'-.5'", "'inf'"]
BINARY = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">", "<=", ">=", "and", "or", "in",
          "not in"]
POWER_OPERANDS = ["2", "3", "n", "z", "0.5", "t", "fl", "f"]
FILTERS = ["length", "string", "int", "float", "abs", "round", "round(1)", "round(1, 'floor')",
           "round(method='ceil')", "lower", "upper", "title", "capitalize", "trim", "first", "last",
           "list", "join(',')", "join", "reverse|list", "sort", "sort(reverse=true)",
           "sort(case_sensitive=true)", "unique|list", "default('D')", "default('D', true)",
           "tojson", "e", "replace('l', 'L')", "sum", "min", "max", "select|list", "reject|list",
           "map('upper')|list", "map('title')|list", "indent(2)", "wordcount", "count",
           "tojson(indent=2, sort_keys=true)", "tojson(ensure_ascii=true)",
           "tojson(separators=(',', ':'))", "tojson(true, 1)"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping",
         "iterable", "sequence", "odd", "even", "divisibleby(3)", "true", "false", "boolean",
         "lower", "upper", "equalto(1)", "sameas(none)", "sameas(true)", "in([1, 2])", "gt(1)",
         "ge(2.5)", "lt('m')", "le(0)", "ne(7)"]
STR_METHODS = ["upper()", "lower()", "title()", "capitalize()", "strip()", "lstrip('h')",
               "rstrip('.')", "split()", "split(' ')", "split(' ', 1)", "rsplit(' ', 1)",
               "rsplit(none, 1)", "startswith('h')", "startswith(('x', 'H'))", "endswith('.')",
               "replace('l', 'L')", "replace('', '-', 2)", "count('l')", "find('ö')", "isdigit()",
               "isalpha()", "isalnum()", "isspace()", "islower()", "isupper()", "splitlines()",
               "partition(' ')[2]", "rpartition('l') | join('+')"]
SUBSCRIPTS = ["0", "-1", "1:", ":-1", "::2", "::-1", "1:3", "5", "-3:"]


def random_expression(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.3:
        return rng.choice(ATOMS)
    if r < 0.47:
        return f"({random_expression(rng, depth + 1)} {rng.choice(BINARY)} {random_expression(rng, depth + 1)})"
    if r < 0.5:
        return f"({rng.choice(POWER_OPERANDS)} ** {rng.choice(POWER_OPERANDS)})"
    if r < 0.65:
        return f"({random_expression(rng, depth + 1)} | {rng.choice(FILTERS)})"
    if r < 0.72:
        return f"({random_expression(rng, depth + 1)} is {rng.choice(['', 'not '])}{rng.choice(TESTS)})"
    if r < 0.82:
        return rng.choice(["s", "e", "u", "w", "'ÀÉ ǆ'"]) + "." + rng.choice(STR_METHODS)
    if r < 0.87:
        return f"{rng.choice(['s', 'u', 'w', 'l', 'ls'])}[{rng.choice(SUBSCRIPTS)}]"
    if r < 0.88:
        return rng.choice(["l.count(1)", "ls.count('é')", "l.index(2)", "ls.index('c')"])
    if r < 0.92:
        return f"(not {random_expression(rng, depth + 1)})"
    if r < 0.95:
        return f"(-{rng.choice(['n', 'f', 't', '(1 + 2)', 'l[0]'])})"
    return (f"({random_expression(rng, depth + 1)} if {random_expression(rng, depth + 1)} "
            f"else {random_expression(rng, depth + 1)})")


def random_template(rng):
    r = rng.random()
    if r < 0.6:
        return "{{ " + random_expression(rng) + " }}"
    if r < 0.8:
        return "{% if " + random_expression(rng) + " %}T{% else %}F{% endif %}"
    if r < 0.9:
        return "{% for x in " + random_expression(rng) + " %}{{ x }}{{ loop.index }},{% endfor %}"
    return ("{% for k, v in " + rng.choice(["d", "{'B': 1, 'a': 2, 'c': 0}"]) + " | " +
            rng.choice(["dictsort", "dictsort(true)", "dictsort(by='value')", "dictsort(reverse=true)",
                        "items"]) + " %}{{ k }}={{ v }};{% endfor %}")


def expression_cases(count=1200, seed=5, per_case=25):
    rng = random.Random(seed)
    kept = []
    for _ in range(count):
        template = random_template(rng)
        try:
            ENV.from_string(template).render(**json.loads(json.dumps(EXPRESSION_CONTEXT)))
            kept.append(template)
        except Exception:  # jinja2 refuses it: not a case
            pass
    cases = []
    for k in range(0, len(kept), per_case):
        template = "\n".join(kept[k:k + per_case])
        cases.append({"name": f"expressions/{k // per_case}", "template": template,
                      "context": EXPRESSION_CONTEXT,
                      "expected": ENV.from_string(template).render(**json.loads(json.dumps(EXPRESSION_CONTEXT)))})
    return cases


# Random templates of text and tags (fixed seed) for the whitespace rules: trim_blocks and
# lstrip_blocks, "-" and "+" on either side of block, comment and variable tags, tags that do
# or do not start their line, line breaks kept or dropped at the end of the template.
WS_TEXT = ["", " ", "  ", "\n", "\n\n", " \n", "\n  ", "\t", "a", "b c", "x\n", "  y  \n",
           "\n\tz", "  \n  ", "\r\n"]


def random_ws_template(rng):
    def marker():
        return rng.choice(["", "", "-", "+"]) if rng.random() < 0.5 else ""

    def text():
        return "".join(rng.choice(WS_TEXT) for _ in range(rng.randint(0, 3)))

    def tag(body):
        return "{%" + marker() + " " + body + " " + marker() + "%}"

    def block(depth):
        parts = []
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            parts.append(text())
            if r < 0.3 or depth > 2:
                parts.append("{{" + rng.choice(["", "-"]) + " " + rng.choice(["x", "ns.c", "y", "'q'"]) +
                             " " + rng.choice(["", "-"]) + "}}")
            elif r < 0.45:
                parts.append(tag("if " + rng.choice(["x", "not x", "y > 1"])) + block(depth + 1) +
                             (tag("else") + block(depth + 1) if rng.random() < 0.5 else "") + tag("endif"))
            elif r < 0.6:
                parts.append(tag(f"for i in range({rng.randint(0, 3)})") + block(depth + 1) + tag("endfor"))
            elif r < 0.7:
                parts.append(tag("set y = " + rng.choice(["1", "x", "(y or 0) + 1"])))
            elif r < 0.8:
                parts.append(tag("set ns.c = ns.c + 1"))
            elif r < 0.9:
                parts.append("{#" + marker() + " c " + marker() + "#}")
            else:
                parts.append(tag("for k in ['a', 'b']") + block(depth + 1) + tag("else") + "E" +
                             tag("endfor"))
        parts.append(text())
        return "".join(parts)

    return tag("set ns = namespace(c=0)") + block(0) + rng.choice(["", "\n", "\r\n", "\n\n"])


def random_cases(name, make_template, context, count, seed):
    """`count` templates from make_template(rng), each a case of its own where jinja2 renders it
    (a copy of the context each time: a template cannot change the next one's)."""
    rng = random.Random(seed)
    cases = []
    for k in range(count):
        template = make_template(rng)
        try:
            expected = ENV.from_string(template).render(**json.loads(json.dumps(context)))
        except Exception:  # jinja2 refuses it: not a case
            continue
        cases.append({"name": f"{name}/{k}", "template": template, "context": context,
                      "expected": expected})
    return cases


# Random nested for loops (fixed seed): every loop.* attribute, loop.cycle() and loop.changed(),
# break / continue, loop filters, else branches, set inside loops (scoped) and through a
# namespace (not).
LOOP_CONTEXT = {"l": [3, 1, 2], "ls": ["b", "a"], "d": {"b": 1, "a": 2}, "e": [], "n": 2,
                "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
LOOP_ITERABLES = ["l", "ls", "d", "msgs", "e", "range(n)", "range(3, 0, -1)", "l | sort", "'ab'",
                  "msgs | selectattr('role', 'equalto', 'user')", "l if l else []"]
LOOP_VALUES = ["loop.index", "loop.index0", "loop.revindex", "loop.revindex0", "loop.first",
               "loop.last", "loop.length", "loop.previtem", "loop.nextitem", "loop.cycle('o', 'e')",
               "loop.changed(x)", "loop.depth", "loop.depth0", "x", "x ~ '!'", "ns.t", "y"]


def random_loop_template(rng):
    def body(depth):
        parts = []
        for _ in range(rng.randint(1, 3)):
            r = rng.random()
            if r < 0.35 or depth > 2:
                parts.append("{{ " + rng.choice(LOOP_VALUES) + " }},")
            elif r < 0.5:
                parts.append("{% if " + rng.choice(["loop.first", "loop.last", "loop.index is even", "x",
                                                    "not loop.last"]) + " %}" + body(depth + 1) +
                             "{% else %}-{% endif %}")
            elif r < 0.6:
                parts.append("{% if loop.index > 1 %}{% " + rng.choice(["break", "continue"]) +
                             " %}{% endif %}")
            elif r < 0.7:
                parts.append("{% set ns.t = ns.t ~ loop.index %}")
            elif r < 0.8:
                parts.append("{% set y = loop.index %}")
            else:
                v = rng.choice(["x", "z"])
                condition = " if " + v + rng.choice([" != 1", ""]) if rng.random() < 0.3 else ""
                parts.append("{% for " + v + " in " + rng.choice(LOOP_ITERABLES) + condition + " %}[" +
                             body(depth + 1) + "]{% else %}E{% endfor %}")
        return "".join(parts)

    return ("{% set ns = namespace(t='') %}{% set y = 0 %}{% for x in " + rng.choice(LOOP_ITERABLES) +
            " %}" + body(0) + "{% endfor %}|{{ ns.t }}|{{ y }}")


# Random printf-style formatting (fixed seed): the `%` operator on a string with one value or a
# tuple, and the |format filter, over conversions, flags, widths and precisions, ints, floats
# (inf and nan built in the template: the context is JSON), text, None, lists and dicts.
PERCENT_CONTEXT = {"n": 7, "m": -42, "z": 0, "big": 255, "f": 2.5, "g": -0.125, "h": 1234567.891,
                   "t": 1e-7, "s": "Hello", "u": "h\u00e9llo w\u00f6rld", "e": "", "c1": "\u00e9", "b": True,
                   "no": None, "l": [1, 2], "d": {"a": 1, "b": "x"}, "hugef": 1e308}
PERCENT_VALUES = ["n", "m", "z", "big", "f", "g", "h", "t", "s", "u", "e", "c1", "b", "no", "l", "d",
                  "inf", "nan", "ninf", "3.0", "-0.0", "65"]


def random_percent_template(rng):
    def spec():
        flags = "".join(rng.choice(["", "#", "0", "-", "+", " "]) for _ in range(rng.randint(0, 2)))
        return ("%" + flags + rng.choice(["", "", "3", "8", "12"]) +
                rng.choice(["", "", ".0", ".2", ".5", ".10"]) + rng.choice("sridiuxXoeEfFgGc"))

    k = rng.randint(1, 3)
    fmt = "".join(rng.choice(["", "a", "[", " ", "\u00e9"]) + spec() for _ in range(k))
    fmt += rng.choice(["", "%%", "z"])
    values = [rng.choice(PERCENT_VALUES) for _ in range(k)]
    if k == 1 and rng.random() < 0.5:
        expr = f"{fmt!r} % {values[0]}"
    elif rng.random() < 0.5:
        expr = f"{fmt!r} % ({', '.join(values)}{',' if k == 1 else ''})"
    else:
        expr = f"{fmt!r} | format({', '.join(values)})"
    return ("{% set inf = hugef * 10 %}{% set nan = inf - inf %}{% set ninf = -inf %}{{ " + expr +
            " }}")


# Random str.format() calls (fixed seed): auto-numbered fields with !r / !s and format specs of
# every part (fill, align, sign, #, 0, width, grouping, precision, type) over the same values.
def random_brace_template(rng):
    def spec():
        parts = []
        if rng.random() < 0.4:
            parts.append(rng.choice(["", "*", "0", "x", "\u00e9"]) + rng.choice("<>=^"))
        parts += [rng.choice(["", "", "+", "-", " "]), rng.choice(["", "", "#"]), rng.choice(["", "", "0"]),
                  rng.choice(["", "", "3", "8", "12"]), rng.choice(["", "", "", ",", "_"]),
                  rng.choice(["", "", ".0", ".2", ".5"]),
                  rng.choice(["", "", "s", "d", "x", "X", "o", "b", "c", "e", "E", "f", "F", "g", "G", "%", "n"])]
        return "".join(parts)

    fields = []
    for _ in range(rng.randint(1, 3)):
        sp = spec() if rng.random() < 0.8 else ""
        fields.append("{" + rng.choice(["", "", "", "!r", "!s"]) + (":" + sp if sp else "") + "}")
    fmt = "".join(rng.choice(["", "a", "[", " ", "{{", "}}"]) + f for f in fields)
    values = ", ".join(rng.choice(PERCENT_VALUES) for _ in fields)
    return ("{% set inf = hugef * 10 %}{% set nan = inf - inf %}{% set ninf = -inf %}{{ " +
            f"{fmt!r}.format({values})" + " }}")


# The filters that cut, pad, quote, size, batch and group text and lists, with random
# arguments over text of every kind (spaces, tabs, newlines, non-ASCII, characters URLs quote).
def random_filter_template(rng):
    def text():
        return repr("".join(rng.choice("ab cdé  ü-_/?&=~.%+\t\nXYZ01🦙'\"<>")
                            for _ in range(rng.randint(0, 30))))
    kind = rng.randint(0, 7)
    s = text()
    if kind == 0:
        args = [str(rng.randint(-2, 35))]
        if rng.random() < .5:
            args.append(rng.choice(["true", "false"]))
        if rng.random() < .5:
            args.append(rng.choice(["'...'", "''", "'…'", "'>'"]))
        if rng.random() < .5:
            args.append(str(rng.randint(0, 6)))
        return "{{ %s | truncate(%s) }}" % (s, ", ".join(args))
    if kind == 1:
        method = rng.choice(["center", "ljust", "rjust"])
        fill = rng.choice(["", ", '*'", ", 'é'", ", ' '"])
        return "{{ %s.%s(%d%s) }}|{{ %s | center(%d) }}" % (s, method, rng.randint(-3, 40), fill, s,
                                                         rng.randint(0, 40))
    if kind == 2:
        head = rng.choice(["", "-", "+", "-12", "+x", "7", "ab"])
        return "{{ %s.zfill(%d) }}" % (repr(head + eval(s)[:3]), rng.randint(-1, 12))
    if kind == 3:
        value = rng.choice([s, "{%s: %s, 'k': 1}" % (s, s), "[[%s, %s]]" % (s, s),
                            str(rng.randint(-99, 99)), "none", "true", "2.5"])
        return "{{ %s | urlencode }}" % value
    if kind == 4:
        value = rng.choice([str(rng.randint(-10**6, 10**6)), str(10 ** rng.randint(0, 18) + rng.randint(-2, 2)),
                            repr(rng.uniform(-1e4, 1e4)), repr(10 ** rng.uniform(-1, 28)),
                            "'%d'" % rng.randint(0, 10**9), "1", "1.0", "true", "false"])
        return "{{ %s | filesizeformat%s }}" % (value, rng.choice(["", "(true)", "(false)", "(binary=true)"]))
    if kind == 5:
        fill = rng.choice(["", ", 'f'", ", none", ", 0"])
        return "{{ range(%d) | batch(%d%s) | list }}|{{ range(%d) | slice(%d%s) | list }}" % (
            rng.randint(0, 12), rng.randint(0, 9), fill, rng.randint(0, 12), rng.randint(1, 9), fill)
    if kind == 6:
        records = ", ".join("{'k': %s, 'v': %d}" % (rng.choice(["'a'", "'A'", "'b'", "'B'", "'é'", "'É'"]),
                                                    rng.randint(0, 3)) for _ in range(rng.randint(0, 6)))
        return ("{%% for g, l in [%s] | groupby(%s%s) %%}[{{ g }}:{{ l | map(attribute='v') | join }}]{%% endfor %%}"
                % (records, rng.choice(["'k'", "'v'"]),
                   rng.choice(["", ", case_sensitive=true", ", case_sensitive=false"])))
    items = ", ".join("%s: %s" % (repr(rng.choice(["a", "b-c", "d_e", "é", "x:y"])), rng.choice([s, "none", "1", "true"]))
                      for _ in range(rng.randint(0, 4)))
    return "{{ {%s} | xmlattr%s }}" % (items, rng.choice(["", "(false)"]))


# |wordwrap with random arguments over lines of words textwrap splits in its own ways (hyphens
# between letters, em-dashes, digits, non-ASCII letters and spaces, no-break spaces, long words).
WRAP_WORDS = ["well-known", "a-b", "x--y", "--", "---z", "re-re-entry", "é-è", "1-2", "ab-1c", "word",
              "w", "supercalifragilistic", "long-hyphenated-compound-word", "é", "日本語", "a.b", "end.",
              "?", "'q'", "--dash--", "x-", "-y", "a--", "ab--cd", "9--a", "__", "_-_", "ǅ-ǅ", "a-²",
              "\xa0", "x\xa0y"]
WRAP_SEPARATORS = [" ", "  ", "\t", " \n ", "\n", "\r\n", "\x0b", "", "\u3000", "-", " - "]


def random_wordwrap_template(rng):
    text = "".join(rng.choice(WRAP_WORDS) + rng.choice(WRAP_SEPARATORS) for _ in range(rng.randint(0, 14)))
    if rng.random() < .3:
        text = " " * rng.randint(1, 3) + text
    args = [str(rng.randint(1, 25))]
    if rng.random() < .5:
        args.append(rng.choice(["true", "false"]))
    if rng.random() < .5:
        if len(args) == 1:
            args.append("true")
        args.append(rng.choice(["none", "'|'", "'<br>'"]))
    if rng.random() < .5:
        while len(args) < 3:
            args.append("true" if len(args) == 1 else "none")
        args.append(rng.choice(["true", "false"]))
    return "{{ %r | wordwrap(%s) }}" % (text, ", ".join(args))


def main():
    out = []
    for tname, cname in CASES + CASES_EXTRA:
        try:
            rendered = ENV.from_string(TEMPLATES[tname]).render(**CONTEXTS[cname])
            case = {"expected": rendered}
        except (TemplateError, TypeError, ValueError, KeyError, IndexError, AssertionError,
                ArithmeticError) as e:  # Python's too
            case = {"error": str(e)}
        case.update({"name": f"{tname}/{cname}", "template": TEMPLATES[tname], "context": CONTEXTS[cname]})
        out.append(case)
    out.extend(expression_cases())
    out.extend(random_cases("whitespace_random", random_ws_template, {"x": True}, 300, 9))
    out.extend(random_cases("loops_random", random_loop_template, LOOP_CONTEXT, 200, 13))
    out.extend(random_cases("percent_random", random_percent_template, PERCENT_CONTEXT, 400, 17))
    out.extend(random_cases("brace_random", random_brace_template, PERCENT_CONTEXT, 400, 19))
    out.extend(random_cases("filters_random", random_filter_template, {}, 400, 23))
    out.extend(random_cases("wordwrap_random", random_wordwrap_template, {}, 200, 29))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "tests", "chat", "jinja_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(out)} cases to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
