# Completes command lines in real interactive shells, as a user would: for
# each line, a fresh shell under a pseudo-terminal loads the setup file (which
# loads the completion script the way a user would), the line is typed, then
# one Tab, then a key that prints the line as it stands after the Tab.
#
#   zsh -f pty-complete.zsh <bash|zsh> <setup file> <line>...
#
# Prints, for each line:
#   @@case <n>
#   <what the completion offered, one per line>
#   @@line <the line after the Tab>
#   @@status ok | no completion | no line
# The setup files print <<ready>>, mark the completion's output with <<begin>>
# and <<end>>, and print the line as <<line:...:enil>>.
# Every wait is bounded, and every shell started is ended (SIGHUP, then
# SIGKILL: bash busy in a completion function outlives SIGHUP), so a broken
# completion script shows as a failed case, never as a hang or a stray process.
zmodload zsh/zpty zsh/datetime zsh/zselect zsh/system || exit 3
setopt extended_glob no_unset

shell=$1 setup=$2
shift 2
case $shell in
  bash) command='bash --norc --noprofile -i' ;;
  zsh) command='zsh -f -i' ;;
  *) print -u2 "unknown shell $shell"; exit 3 ;;
esac

out=''
deadline=0
# Reads the shell's output into $out until it matches the pattern $1; fails
# when the deadline passes or the shell exits first.
read_until() {
  local chunk ret
  while (( EPOCHREALTIME < deadline )); do
    [[ $out == ${~1} ]] && return 0
    chunk=''
    zpty -r capture chunk
    ret=$?
    if (( ret == 0 )); then
      out+=$chunk
    elif (( ret == 2 )); then
      [[ $out == ${~1} ]]
      return
    else
      zselect -t 1
    fi
  done
  [[ $out == ${~1} ]]
}

n=0
for line in "$@"; do
  n=$(( n + 1 ))
  out=''
  deadline=$(( EPOCHREALTIME + ${NOTARIZE_PTY_SECONDS:-10} ))
  # The shell's pid, printed before it starts (exec keeps it), to end it for sure.
  zpty -b capture 'print -r -- "<<pid:$sysparams[pid]>>"; exec '$command
  pid=''
  read_until '*<<pid:<->>>*' && pid=${${out#*<<pid:}%%>>*}
  zpty -w capture "source ${(q)setup}"
  status_=ok
  if ! read_until '*<<ready>>*'; then
    status_='no ready'
  else
    out=''
    zpty -w -n capture "$line"$'\t'
    if ! read_until '*<<end>>*'; then
      status_='no completion'
    else
      zpty -w -n capture $'\x18\x0c'
      read_until '*<<line:*:enil>>*' || status_='no line'
    fi
  fi
  zpty -d capture
  if [[ -n $pid ]] && kill -0 $pid 2>/dev/null; then
    zselect -t 10
    kill -0 $pid 2>/dev/null && kill -KILL $pid 2>/dev/null
  fi
  print -r -- "@@case $n"
  plain=${out//$'\r'/}
  if [[ $plain == *'<<begin>>'*'<<end>>'* ]]; then
    offered=${${plain#*<<begin>>$'\n'}%%<<end>>*}
    for candidate in "${(@f)offered}"; do
      [[ -n $candidate ]] && print -r -- "$candidate"
    done
  fi
  if [[ $plain == *'<<line:'*':enil>>'* ]]; then
    after=${${plain#*<<line:}%%:enil>>*}
    print -r -- "@@line $after"
  fi
  print -r -- "@@status $status_"
done
