# Setup of a fresh `bash --norc -i` for pty-complete.zsh: loads the
# completion script as a user would ($NOTARIZE_MODE: eval or source), then
# wraps its completion function to record what it offered, keeping the
# options it was registered with.
PS1='' PS2=''
unset HISTFILE
bind 'set bell-style none'
# The user's own shell options (set -u...), as their rc file sets them.
eval "${NOTARIZE_USER_RC-}"
case $NOTARIZE_MODE in
  eval) eval "$(cat "$NOTARIZE_SCRIPT")" ;;
  source) source "$NOTARIZE_SCRIPT" ;;
esac
__notarize_spec=$(complete -p notarize)
[[ $__notarize_spec =~ -F\ ([^ ]+) ]] && __notarize_function=${BASH_REMATCH[1]}
__notarize_capture() {
  printf '<<begin>>\n'
  "$__notarize_function" "$@"
  local status=$?
  (( ${#COMPREPLY[@]} )) && printf '%s\n' "${COMPREPLY[@]}"
  printf '<<end>>\n'
  return $status
}
eval "${__notarize_spec/-F $__notarize_function /-F __notarize_capture }"
bind -x '"\C-x\C-l": printf "<<line:%s:enil>>\n" "$READLINE_LINE"; exit'
printf '<<ready>>\n'
