/**
 * `notarize completion bash|zsh|fish`: a completion script generated from the
 * commander program itself (global options) and from every command of the
 * registry, configured as it would be to run (subcommands, options, which
 * options take a value, arguments and their choices), so it cannot drift from
 * the CLI: a new command, subcommand or option appears in it by itself.
 *
 * The three scripts share one table of that data and one way of reading a
 * command line: global options may come anywhere, also before the command; the
 * value of an option that takes one is never taken for a command or an
 * argument; after `--` everything is an argument.
 */
import { Argument, Command, type Option } from 'commander';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { loadingModule } from '../fd-shortage.js';
import type { ValueResult } from '../output/present.js';
import { finish, viewWithoutTables } from './action.js';
import { examples, withValues } from './options.js';
// Not from the registry, which loads this module: it hands its list in (see configure).
import type { CommandEntry } from './command.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;

/**
 * What completes a value: named choices, file names, directory names, or
 * nothing (a URL, a number, a digest: offering file names there would only
 * mislead).
 */
export type ValueKind = 'choice' | 'file' | 'dir' | 'none';

export interface ValueSpec {
  kind: ValueKind;
  choices: readonly string[];
}

export interface OptionSpec {
  /** The long and short spellings, e.g. ['--quiet', '-q']. */
  flags: string[];
  description: string;
  /** Absent for an option that takes no value. */
  value?: ValueSpec;
}

export interface ArgumentSpec {
  name: string;
  variadic: boolean;
  value: ValueSpec;
}

export interface CommandSpec {
  name: string;
  description: string;
  /** Its own options, with --help; those of the commands above it apply too. */
  options: OptionSpec[];
  arguments: ArgumentSpec[];
  subcommands: CommandSpec[];
}

/**
 * The value a placeholder such as `<file|->`, `<dir>`, `[paths...]` or
 * `<hash|file>` stands for, from its name: the names are what `--help` shows,
 * so they are kept honest by being read there.
 */
function valueSpec(placeholder: string, choices: readonly string[] | undefined): ValueSpec {
  if (choices && choices.length > 0) return { kind: 'choice', choices: [...choices] };
  const names = placeholder
    .replace(/\.\.\.$/, '')
    .split('|')
    .map((n) => n.trim().toLowerCase());
  if (names.some((n) => ['file', 'files', 'path', 'paths'].includes(n))) return { kind: 'file', choices: [] };
  if (names.some((n) => ['dir', 'directory'].includes(n))) return { kind: 'dir', choices: [] };
  return { kind: 'none', choices: [] };
}

function optionSpec(option: Option): OptionSpec {
  const flags = [option.long, option.short].filter((f): f is string => Boolean(f));
  const spec: OptionSpec = { flags, description: option.description };
  if (option.required || option.optional) {
    const placeholder = /[<[]([^>\]]+)[>\]]/.exec(option.flags)?.[1] ?? '';
    spec.value = valueSpec(placeholder, option.argChoices);
  }
  return spec;
}

function argumentSpec(argument: Argument): ArgumentSpec {
  return {
    name: argument.name(),
    variadic: argument.variadic,
    value: valueSpec(argument.name(), argument.argChoices),
  };
}

/** A configured command, with its subcommands, as completion sees it. */
export function describeCommand(command: Command): CommandSpec {
  return {
    name: command.name(),
    description: command.summary() || command.description(),
    options: command.createHelp().visibleOptions(command).map(optionSpec),
    arguments: command.registeredArguments.map(argumentSpec),
    subcommands: command.commands.map(describeCommand),
  };
}

/**
 * The whole CLI: the program's own options (the global ones) and every
 * command of `commands`, each configured on a fresh Command exactly as for a
 * run (its action is set, never called).
 */
export async function completionSpec(program: Command, commands: readonly CommandEntry[]): Promise<CommandSpec> {
  const noContext = (): Context => {
    throw new Error('completion never runs the commands it describes');
  };
  const subcommands: CommandSpec[] = [];
  for (const entry of commands) {
    const command = new Command(entry.name).description(entry.summary);
    // One command's modules at a time, each load as the run's own (cli.ts): all thirteen at once
    // opened their chunks together, and under a low `ulimit -n` one failed as an unexpected error.
    (await loadingModule(entry.load)).configure(command, noContext, commands);
    subcommands.push(describeCommand(command));
  }
  // `help [command...]`, which commander adds by itself (so the program's commands do not list it):
  // what follows it is a command path (`help config set`), so it has every command as a
  // subcommand, each with its own subcommands and nothing else (no option, no argument).
  const help: CommandSpec = {
    name: 'help',
    description: 'display help for command',
    options: [],
    arguments: [],
    subcommands: subcommands.map(helpTopic),
  };
  return { ...describeCommand(program), subcommands: [...subcommands, help] };
}

/** What `help` takes for `command`: its name, then those of its subcommands, down to a leaf. */
function helpTopic(command: CommandSpec): CommandSpec {
  return {
    name: command.name,
    description: command.description,
    options: [],
    arguments: [],
    subcommands: command.subcommands.map(helpTopic),
  };
}

/** One line of text for a table cell: no tab, no newline, never empty. */
function cell(text: string): string {
  return text.replace(/\s+/g, ' ').trim() || '-';
}

/**
 * The data every script reads, one row per line, six tab-separated cells
 * that are never empty ('-' stands for nothing):
 *   C  <parent path>  <subcommand>  -       -                      <description>
 *   O  <path>         <flag>        <kind>  <choices, space-separated>  <description>
 *   A  <path>         <index>       <kind>  <choices>              <name>
 * A path is the command names from the program down, space-separated
 * ('notarize config'); a kind is 'flag' for an option taking no value, else a
 * ValueKind; a variadic argument's index ends in '+' (it takes the rest).
 */
export function completionTable(spec: CommandSpec): string {
  const rows: string[][] = [];
  const walk = (command: CommandSpec, path: string) => {
    for (const option of command.options) {
      for (const flag of option.flags) {
        const kind = option.value?.kind ?? 'flag';
        rows.push(['O', path, flag, kind, (option.value?.choices ?? []).join(' '), option.description]);
      }
    }
    command.arguments.forEach((argument, index) => {
      const name = argument.variadic ? `${index}+` : String(index);
      rows.push(['A', path, name, argument.value.kind, argument.value.choices.join(' '), argument.name]);
    });
    for (const sub of command.subcommands) {
      rows.push(['C', path, sub.name, '-', '-', sub.description]);
      walk(sub, `${path} ${sub.name}`);
    }
  };
  walk(spec, spec.name);
  return rows.map((row) => row.map(cell).join('\t')).join('\n');
}

/** A POSIX shell (bash, zsh) single-quoted word. */
function shQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** A fish single-quoted word: there, backslash escapes ' and \ too. */
function fishQuote(text: string): string {
  return `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

function bash(table: string): string {
  return `# bash completion for notarize, generated by \`notarize completion bash\`.
# Load it from ~/.bashrc:
#   eval "$(notarize completion bash)"
# or save it where bash-completion finds it:
#   notarize completion bash > ~/.local/share/bash-completion/completions/notarize

# Whether option $1 takes a value where the command line stands ($cmdpath):
# options of the command and of the commands above it (global options)
# apply. Sets REPLY to the option's key in option_kinds.
_notarize_takes_value() {
  local p=$cmdpath
  while :; do
    if [[ -n \${option_kinds["$p/$1"]+set} ]]; then
      REPLY="$p/$1"
      [[ \${option_kinds["$p/$1"]} != flag ]]
      return
    fi
    [[ $p == *' '* ]] || return 1
    p=\${p% *}
  done
}

# Word $1 without the shell quoting the user typed ("my fi, my\\ fi), in REPLY;
# in BEFORE, the part of REPLY that readline keeps, the candidates replacing
# only what follows: readline's word starts after the last character of
# COMP_WORDBREAKS (= and :, by default) neither quoted nor escaped, or after
# the quote left open ("x=y: the word is x=y).
_notarize_dequote() {
  local s=$1 c q='' i opened=''
  REPLY='' BEFORE=''
  for ((i = 0; i < \${#s}; i++)); do
    c=\${s:i:1}
    if [[ $q == "'" ]]; then
      if [[ $c == "'" ]]; then q=''; else REPLY+=$c; fi
    elif [[ $c == '\\' ]]; then
      i=$((i + 1))
      REPLY+=\${s:i:1}
    elif [[ $c == '"' ]]; then
      if [[ $q == '"' ]]; then
        q=''
      elif [[ -z $q ]]; then
        q='"'
        opened=$REPLY
      fi
    elif [[ -z $q && $c == "'" ]]; then
      q="'"
      opened=$REPLY
    else
      REPLY+=$c
      [[ -z $q && $COMP_WORDBREAKS == *"$c"* ]] && BEFORE=$REPLY
    fi
  done
  [[ -n $q ]] && BEFORE=$opened
}

# Offers values of kind $1 (choices $2) that start with the word $3 as typed,
# each after $4 (--receipt-dir=, the option of an --option=value word).
_notarize_values() {
  local value prefix=$4 BEFORE
  local -a list
  _notarize_dequote "$4$3"
  local typed=\${REPLY#"$prefix"}
  case $1 in
    choice)
      read -ra list <<<"$2"
      for value in "\${list[@]}"; do
        [[ $value == "$typed"* ]] && COMPREPLY+=("$prefix$value")
      done
      ;;
    file | dir)
      # File names are offered as they are; -o filenames makes readline quote
      # them (spaces...) and mark directories.
      compopt -o filenames 2>/dev/null
      if [[ $1 == dir ]]; then
        mapfile -t list < <(compgen -d -- "$typed")
      else
        mapfile -t list < <(compgen -f -- "$typed")
      fi
      for value in "\${list[@]}"; do
        # Readline marks as directories the names it is given, which lose
        # their start below: mark them here, and end none with a space.
        if [[ -n $BEFORE && -d $value ]]; then
          value+=/
          ((\${#list[@]} == 1)) && compopt -o nospace 2>/dev/null
        fi
        COMPREPLY+=("$prefix$value")
      done
      ;;
  esac
  # Readline replaces only its word (what follows BEFORE): offer that part.
  [[ -n $BEFORE ]] && COMPREPLY=("\${COMPREPLY[@]#"$BEFORE"}")
  return 0
}

# The user's shell options stay theirs, and this script runs with bash's
# defaults: set -u (nounset) would stop it at the first unset word.
_notarize() {
  local nounset=''
  [[ $- == *u* ]] && nounset=1 && set +u
  _notarize_complete "$@"
  local status=$?
  [[ -n $nounset ]] && set -u
  return $status
}

_notarize_complete() {
  COMPREPLY=()
  local table=${shQuote(table)}
  local -A option_kinds=() option_choices=() argument_kinds=() argument_choices=() subcmds=() flags_at=()
  local type p name kind choices text
  while IFS=$'\\t' read -r type p name kind choices text; do
    [[ $choices == - ]] && choices=''
    case $type in
      C) subcmds["$p/$name"]=1 ;;
      O)
        option_kinds["$p/$name"]=$kind
        option_choices["$p/$name"]=$choices
        flags_at["$p"]+=" $name"
        ;;
      A)
        argument_kinds["$p/$name"]=$kind
        argument_choices["$p/$name"]=$choices
        ;;
    esac
  done <<<"$table"

  # The words as typed: bash splits "--output=json" and "http://host" at = and
  # :, which would make "json" or "//host" look like a command. Glue back the
  # pieces that no blank separates in the line.
  local -a words=()
  local line=$COMP_LINE word rest i cword=0
  for i in "\${!COMP_WORDS[@]}"; do
    word=\${COMP_WORDS[i]}
    rest=\${line#"\${line%%[![:space:]]*}"}
    if ((i > 0 && \${#rest} == \${#line})); then
      words[\${#words[@]} - 1]+=$word
    else
      words+=("$word")
    fi
    line=\${rest#"$word"}
    ((i == COMP_CWORD)) && cword=$((\${#words[@]} - 1))
  done

  # Walk the words before the cursor: the command path (notarize config get),
  # how many arguments it has, and whether the cursor is on an option's value.
  local cmdpath=notarize nargs=0 dashdash='' value_for='' j
  i=1
  while ((i < cword)); do
    word=\${words[i]}
    if [[ -z $dashdash && $word == -- ]]; then
      dashdash=1
    elif [[ -z $dashdash && $word == --* ]]; then
      if [[ $word != *=* ]] && _notarize_takes_value "$word"; then
        if ((i + 1 == cword)); then
          value_for=$REPLY
          break
        fi
        i=$((i + 1))
      fi
    elif [[ -z $dashdash && $word == -?* ]]; then
      # Bundled short options (-rq): one taking a value takes the rest of the
      # word, or the next word when it ends the bundle.
      for ((j = 1; j < \${#word}; j++)); do
        if _notarize_takes_value "-\${word:j:1}"; then
          if ((j == \${#word} - 1)); then
            if ((i + 1 == cword)); then
              value_for=$REPLY
              break 2
            fi
            i=$((i + 1))
          fi
          break
        fi
      done
    elif ((nargs == 0)) && [[ -n \${subcmds["$cmdpath/$word"]+set} ]]; then
      cmdpath="$cmdpath $word"
    else
      nargs=$((nargs + 1))
    fi
    i=$((i + 1))
  done

  local cur=\${words[cword]}
  if [[ -n $value_for ]]; then
    _notarize_values "\${option_kinds[$value_for]}" "\${option_choices[$value_for]}" "$cur"
    return 0
  fi
  if [[ -z $dashdash && $cur == --*=* ]]; then
    _notarize_takes_value "\${cur%%=*}" &&
      _notarize_values "\${option_kinds[$REPLY]}" "\${option_choices[$REPLY]}" "\${cur#*=}" "\${cur%%=*}="
    return 0
  fi
  if [[ -z $dashdash && $cur == -* ]]; then
    local -A seen=()
    local -a list
    p=$cmdpath
    while :; do
      read -ra list <<<"\${flags_at["$p"]}"
      for name in "\${list[@]}"; do
        if [[ $name == "$cur"* && -z \${seen["$name"]+set} ]]; then
          seen["$name"]=1
          COMPREPLY+=("$name")
        fi
      done
      [[ $p == *' '* ]] || break
      p=\${p% *}
    done
    return 0
  fi
  if ((nargs == 0)); then
    local found=''
    for name in "\${!subcmds[@]}"; do
      [[ \${name%/*} == "$cmdpath" ]] || continue
      found=1
      name=\${name##*/}
      [[ $name == "$cur"* ]] && COMPREPLY+=("$name")
    done
    [[ -n $found ]] && return 0
  fi
  local key="$cmdpath/$nargs"
  if [[ -z \${argument_kinds["$key"]+set} ]]; then
    key=''
    for ((j = nargs; j >= 0; j--)); do
      if [[ -n \${argument_kinds["$cmdpath/$j+"]+set} ]]; then
        key="$cmdpath/$j+"
        break
      fi
    done
  fi
  [[ -n $key ]] && _notarize_values "\${argument_kinds[$key]}" "\${argument_choices[$key]}" "$cur"
  return 0
}

# Associative arrays, mapfile and compopt came with bash 4 (macOS ships 3.2).
if ((BASH_VERSINFO[0] >= 4)); then
  complete -F _notarize notarize
else
  echo "notarize: completion needs bash 4 or later (this is $BASH_VERSION)" >&2
fi
`;
}

function zsh(table: string): string {
  return `#compdef notarize
# zsh completion for notarize, generated by \`notarize completion zsh\`.
# Save it as _notarize in a directory of $fpath, before compinit runs:
#   notarize completion zsh > "\${fpath[1]}/_notarize"
# or load it in ~/.zshrc, after compinit:
#   eval "$(notarize completion zsh)"

_notarize() {
  local table=${shQuote(table)}
  local -A option_kinds option_choices option_texts argument_kinds argument_choices subcmds command_texts flags_at
  local -a row
  local line
  for line in "\${(@f)table}"; do
    row=("\${(@ps:\\t:)line}")
    [[ $row[5] == - ]] && row[5]=''
    case $row[1] in
      C)
        subcmds[$row[2]/$row[3]]=1
        command_texts[$row[2]/$row[3]]=$row[6]
        ;;
      O)
        option_kinds[$row[2]/$row[3]]=$row[4]
        option_choices[$row[2]/$row[3]]=$row[5]
        option_texts[$row[2]/$row[3]]=$row[6]
        flags_at[$row[2]]+=" $row[3]"
        ;;
      A)
        argument_kinds[$row[2]/$row[3]]=$row[4]
        argument_choices[$row[2]/$row[3]]=$row[5]
        ;;
    esac
  done

  # Sets REPLY to the key of option $1 where the line stands ($cmdpath): options
  # of the command and of the commands above it (global options) apply.
  # Fails for an option that takes no value, or an unknown one.
  local p
  __notarize_takes_value() {
    p=$cmdpath
    while :; do
      if (( $+option_kinds[$p/$1] )); then
        REPLY=$p/$1
        [[ $option_kinds[$p/$1] != flag ]]
        return
      fi
      [[ $p == *' '* ]] || return 1
      p=\${p% *}
    done
  }
  # Offers values of kind $1 (choices $2).
  __notarize_values() {
    case $1 in
      choice) compadd -- \${=2} ;;
      file) _files ;;
      dir) _files -/ ;;
      *) _message 'value' ;;
    esac
  }

  # Walk the words before the cursor: the command path (notarize config get),
  # how many arguments it has, and whether the cursor is on an option's value.
  local cmdpath=notarize word dashdash='' value_for=''
  integer nargs=0 i=2 j
  while (( i < CURRENT )); do
    word=$words[i]
    if [[ -z $dashdash && $word == -- ]]; then
      dashdash=1
    elif [[ -z $dashdash && $word == --* ]]; then
      if [[ $word != *=* ]] && __notarize_takes_value $word; then
        if (( i + 1 == CURRENT )); then
          value_for=$REPLY
          break
        fi
        (( i++ ))
      fi
    elif [[ -z $dashdash && $word == -?* ]]; then
      # Bundled short options (-rq): one taking a value takes the rest of the
      # word, or the next word when it ends the bundle.
      for (( j = 2; j <= $#word; j++ )); do
        if __notarize_takes_value "-$word[j]"; then
          if (( j == $#word )); then
            if (( i + 1 == CURRENT )); then
              value_for=$REPLY
              break 2
            fi
            (( i++ ))
          fi
          break
        fi
      done
    elif (( nargs == 0 )) && (( $+subcmds[$cmdpath/\${(Q)word}] )); then
      cmdpath="$cmdpath \${(Q)word}"
    else
      (( nargs++ ))
    fi
    (( i++ ))
  done

  local -a described
  local name key
  if [[ -n $value_for ]]; then
    __notarize_values $option_kinds[$value_for] $option_choices[$value_for]
  elif [[ -z $dashdash && $PREFIX == --*=* ]]; then
    if __notarize_takes_value \${PREFIX%%=*}; then
      key=$REPLY
      compset -P 1 '*='
      __notarize_values $option_kinds[$key] $option_choices[$key]
    fi
  elif [[ -z $dashdash && $PREFIX == -* ]]; then
    local -A seen
    p=$cmdpath
    while :; do
      for name in \${=flags_at[$p]}; do
        if (( ! $+seen[$name] )); then
          seen[$name]=1
          described+=("\${name//:/\\\\:}:$option_texts[$p/$name]")
        fi
      done
      [[ $p == *' '* ]] || break
      p=\${p% *}
    done
    _describe -t options 'option' described
  else
    if (( nargs == 0 )); then
      for key in \${(k)subcmds}; do
        [[ \${key%/*} == $cmdpath ]] && described+=("\${key##*/}:$command_texts[$key]")
      done
    fi
    if (( $#described )); then
      _describe -t commands 'command' described
    else
      key=$cmdpath/$nargs
      if (( ! $+argument_kinds[$key] )); then
        key=''
        for (( j = nargs; j >= 0; j-- )); do
          if (( $+argument_kinds[$cmdpath/$j+] )); then
            key=$cmdpath/$j+
            break
          fi
        done
      fi
      [[ -n $key ]] && __notarize_values $argument_kinds[$key] $argument_choices[$key]
    fi
  fi
  unfunction __notarize_takes_value __notarize_values
  return 0
}

# Read as the user's options leave them (ksharrays too): \${funcstack[*]} and
# \${+functions[...]}, never $funcstack[1] or $+functions[...].
if [[ "\${funcstack[*]} " == '_notarize '* ]]; then
  # Autoloaded from $fpath: this file is the body of _notarize, run by the
  # first Tab, which must complete too (not only define the function).
  _notarize "$@"
elif (( \${+functions[compdef]} )); then
  compdef _notarize notarize
else
  print -u2 'notarize: zsh completion needs compinit first: autoload -Uz compinit && compinit'
fi
`;
}

function fish(table: string): string {
  return `# fish completion for notarize, generated by \`notarize completion fish\`.
# Save it where fish finds it:
#   notarize completion fish > ~/.config/fish/completions/notarize.fish
# or load it in ~/.config/fish/config.fish:
#   notarize completion fish | source

function __notarize_complete
    set -l table ${fishQuote(table)}
    set -l t \\t
    set -l rows (string split \\n -- $table)
    set -l words (commandline -opc)
    set -l cur (commandline -ct)

    # The cells of the row of option $argv[1] where the line stands
    # ($cmdpath): options of the command and of the commands above it (global
    # options) apply. Prints nothing for an unknown option.
    function __notarize_option -S -a flag
        set -l p $cmdpath
        while true
            for row in (string match -- "O$t$p$t*" $rows)
                set -l cells (string split $t -- $row)
                if test "$cells[3]" = "$flag"
                    string join \\n -- $cells
                    return
                end
            end
            string match -q -- '* *' $p; or return 1
            set p (string replace -r -- ' [^ ]*$' '' $p)
        end
    end
    # Prints the values of kind $argv[1] (choices $argv[2]) for the token
    # $argv[3] as typed (quotes, backslashes).
    function __notarize_values -a kind choices token
        switch $kind
            case choice
                string split ' ' -- $choices
            case file dir
                # fish's own file completion, which reads the token as typed:
                # a command with no completions of its own gets file names.
                set -l names (complete -C"__notarize_no_such_command $token")
                test $kind = dir; and set names (string match -r -- '^[^\t]*/(\t.*)?$' $names)
                # For a token with a = or :, fish also completes what follows
                # the last one (dd if=, PATH=): x= gets x=<every file here>,
                # names no file has. Keep those that exist (a token with ~ or
                # $ is left as it is: its names are not paths as they stand).
                if string match -qr -- '[=:]' $token; and not string match -qr -- '^~|\\$' $token
                    for name in $names
                        test -e (string replace -r -- '\\t.*' '' $name); and printf '%s\\n' $name
                    end
                else
                    string join \\n -- $names
                end
        end
    end

    # Walk the words before the cursor: the command path (notarize config get),
    # how many arguments it has, and whether the cursor is on an option's value.
    set -l cmdpath notarize
    set -l nargs 0
    set -l dashdash 0
    set -l value_for
    set -l i 2
    while test $i -le (count $words)
        set -l word $words[$i]
        if test $dashdash = 0; and test "$word" = --
            set dashdash 1
        else if test $dashdash = 0; and string match -q -- '--*' $word
            if not string match -q -- '*=*' $word
                set -l option (__notarize_option $word)
                if test -n "$option"; and test $option[4] != flag
                    if test $i -eq (count $words)
                        set value_for $option
                        break
                    end
                    set i (math $i + 1)
                end
            end
        else if test $dashdash = 0; and string match -qr -- '^-.' $word
            # Bundled short options (-rq): one taking a value takes the rest
            # of the word, or the next word when it ends the bundle.
            set -l letters (string split '' -- (string sub -s 2 -- $word))
            set -l n (count $letters)
            for j in (seq $n)
                set -l option (__notarize_option -$letters[$j])
                if test -n "$option"; and test $option[4] != flag
                    if test $j -eq $n
                        if test $i -eq (count $words)
                            set value_for $option
                        end
                        set i (math $i + 1)
                    end
                    break
                end
            end
            test -n "$value_for"; and break
        else if test $nargs = 0; and contains -- $word (string match -- "C$t$cmdpath$t*" $rows | string split -f3 $t)
            set cmdpath "$cmdpath $word"
        else
            set nargs (math $nargs + 1)
        end
        set i (math $i + 1)
    end

    if test -n "$value_for"
        __notarize_values $value_for[4] $value_for[5] $cur
    else if test $dashdash = 0; and string match -qr -- '^--[^=]*=' $cur
        set -l flag (string replace -r -- '=.*' '' $cur)
        set -l option (__notarize_option $flag)
        if test -n "$option"; and test $option[4] != flag
            for value in (__notarize_values $option[4] $option[5] (string replace -r -- '^[^=]*=' '' $cur))
                printf '%s=%s\\n' $flag $value
            end
        end
    else if test $dashdash = 0; and string match -q -- '-*' $cur
        set -l seen
        set -l p $cmdpath
        while true
            for row in (string match -- "O$t$p$t*" $rows)
                set -l cells (string split $t -- $row)
                if not contains -- $cells[3] $seen
                    set -a seen $cells[3]
                    printf '%s\\t%s\\n' $cells[3] $cells[6]
                end
            end
            string match -q -- '* *' $p; or break
            set p (string replace -r -- ' [^ ]*$' '' $p)
        end
    else
        set -l subcommands
        if test $nargs = 0
            set subcommands (string match -- "C$t$cmdpath$t*" $rows)
        end
        if test (count $subcommands) -gt 0
            for row in $subcommands
                set -l cells (string split $t -- $row)
                printf '%s\\t%s\\n' $cells[3] $cells[6]
            end
        else
            # The argument at this position, or the variadic one before it.
            set -l found
            for row in (string match -- "A$t$cmdpath$t*" $rows)
                set -l cells (string split $t -- $row)
                if test "$cells[3]" = $nargs
                    set found $cells
                    break
                else if string match -qr -- '\\+$' $cells[3]; and test (string trim -rc + -- $cells[3]) -le $nargs
                    set found $cells
                end
            end
            if test -n "$found"
                __notarize_values $found[4] $found[5] $cur
            end
        end
    end
    functions -e __notarize_option __notarize_values
end

complete -c notarize -e
complete -c notarize -f -a '(__notarize_complete)'
`;
}

/** A Map, not an object: a shell named `valueOf` or `__proto__` must be unknown, not an inherited property. */
const GENERATORS = new Map<string, (table: string) => string>([
  ['bash', bash],
  ['zsh', zsh],
  ['fish', fish],
]);

/**
 * `commands` is the registry, handed in by the CLI: the script describes
 * every command, not only this one.
 */
export function configure(command: Command, context: () => Context, commands: readonly CommandEntry[]): void {
  command
    .addArgument(withValues(new Argument('<shell>', 'bash, zsh or fish'), SHELLS))
    .addHelpText(
      'after',
      examples([
        'eval "$(notarize completion bash)"            # in ~/.bashrc',
        'notarize completion zsh > "${fpath[1]}/_notarize"',
        'notarize completion fish > ~/.config/fish/completions/notarize.fish',
        '# CI images: install completions system-wide at build time',
        'notarize completion bash > /etc/bash_completion.d/notarize',
      ]),
    )
    .action(async (shell: string) => {
      // The program (the parent) holds the global options.
      const result = await runCompletion({ shell, program: command.parent ?? command, commands });
      await finish(await viewWithoutTables(context()), result);
    });
}

/** The completion script of `shell` for `program` and every command of the registry, as data. */
export async function runCompletion(options: {
  shell: string;
  program: Command;
  commands: readonly CommandEntry[];
}): Promise<ValueResult> {
  const generate = GENERATORS.get(options.shell);
  if (!generate) throw new UsageError(`unknown shell '${options.shell}'`, { hint: 'use bash, zsh or fish' });
  return {
    kind: 'value',
    text: { data: generate(completionTable(await completionSpec(options.program, options.commands))) },
  };
}
