# The MuST-C stages, shared by recipes/mustc/run.sh and recipes/synth/run.sh. Source it after
# stages.sh and parse_options; it reads these variables (each overridable as --name value):
#   mustc_root  MuST-C root holding en-<tgt_lang>/data/<split>/{txt,wav}
#   tgt_lang    target language (de, fr, ...)
#   data        data dir written by the stages (manifests, features, vocabularies)
#   src_vocab_size, tgt_vocab_size   SentencePiece sizes
#   speed_perturb  true to add 0.9/1.1 speed-perturbed copies of train
#   nj          parallel jobs for feature extraction
#   mt_text     "EN TGT": extra parallel text for the vocabularies and MT (may be empty)

if run_stage 0 "prep: MuST-C $mustc_root/en-$tgt_lang -> manifests in $data"; then
  need "$mustc_root/en-$tgt_lang/data" "the MuST-C corpus"
  params="root=$mustc_root tgt=$tgt_lang"
  if ! is_done "$data/.done/prep" "$params"; then
    sate prep --mustc-root "$mustc_root" --tgt-lang "$tgt_lang" --out "$data"
    mark_done "$data/.done/prep" "$params"
  fi
fi

if run_stage 1 "features: 80-dim fbank and global CMVN in $data/fbank"; then
  need "$data/.done/prep" "manifests from stage 0"
  params="speed_perturb=$speed_perturb"
  if ! is_done "$data/.done/features" "$params"; then
    sp=(); [ "$speed_perturb" = true ] && sp=(--speed-perturb)
    sate features --data "$data" --jobs "$nj" "${sp[@]}"
    mark_done "$data/.done/features" "$params"
  fi
fi

if run_stage 2 "vocab: SentencePiece source $src_vocab_size, target $tgt_vocab_size"; then
  need "$data/.done/prep" "manifests from stage 0"
  params="src=$src_vocab_size tgt=$tgt_vocab_size mt_text=$mt_text"
  if ! is_done "$data/.done/vocab" "$params"; then
    extra=(); [ -n "$mt_text" ] && extra=(--mt-text $mt_text)
    sate vocab --data "$data" --src-size "$src_vocab_size" --tgt-size "$tgt_vocab_size" "${extra[@]}"
    mark_done "$data/.done/vocab" "$params"
  fi
fi
