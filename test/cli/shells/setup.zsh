# Setup of a fresh `zsh -f -i` for pty-complete.zsh: loads the completion
# script as a user would ($NOTARIZE_MODE: fpath, eval or source), then records
# what the completion system is given, without changing what it does.
PS1='' RPS1='' PROMPT_EOL_MARK=''
# compinit's dump, one per mode (their $fpath differ): the first shell writes
# it, later ones start fast, as a user's do.
dump=$HOME/.zcompdump-$NOTARIZE_MODE
# The user's own shell options (setopt ksharrays...), as their .zshrc sets
# them: from here on, this file reads arrays as any option leaves them.
eval "${NOTARIZE_USER_RC-}"
case $NOTARIZE_MODE in
  fpath)
    # The script saved as _notarize in a directory of $fpath, found by compinit.
    fpath=("$NOTARIZE_FPATH" "${fpath[@]}")
    autoload -Uz compinit && compinit -u -d "$dump"
    ;;
  eval)
    autoload -Uz compinit && compinit -u -d "$dump"
    eval "$(<"$NOTARIZE_SCRIPT")"
    ;;
  source)
    autoload -Uz compinit && compinit -u -d "$dump"
    source "$NOTARIZE_SCRIPT"
    ;;
esac

# Every match added, as added: calls that only gather or test matches (-O, -A,
# -D, as _describe and _files make) pass through unrecorded.
compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
    builtin compadd "$@"
    return
  fi
  local -a __notarize_added
  builtin compadd -A __notarize_added "$@"
  (( $#__notarize_added )) && print -rl -- "${__notarize_added[@]}"
  builtin compadd "$@"
}
__notarize_begin() { print -r -- '<<begin>>'; }
__notarize_end() { print -r -- '<<end>>'; }
compprefuncs=(__notarize_begin)
comppostfuncs=(__notarize_end)
__notarize_line() {
  print -r -- "<<line:${BUFFER}:enil>>"
  exit
}
zle -N __notarize_line
bindkey '^X^L' __notarize_line
print -r -- '<<ready>>'
