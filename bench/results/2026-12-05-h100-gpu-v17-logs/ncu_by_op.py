import csv,sys,re,collections
f=sys.argv[1]
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
H={h:i for i,h in enumerate(hdr)}
def num(r,k):
    v=r[H[k]].replace(',','')
    try: return float(v)
    except: return 0.0
tot=sum(num(r,"Warp Stall Sampling (All Samples)") for r in data)
ex=sum(num(r,"Instructions Executed") for r in data)
print("samples",tot,"instr executed",ex)
byop=collections.defaultdict(lambda:[0,0,collections.Counter()])
reasons=[h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
for r in data:
    src=r[H["Source"]].strip()
    op=re.sub(r'^@!?U?P\w+\s+','',src).split(' ')[0]
    base=op.split('.')[0]
    e=byop[base]; e[0]+=num(r,"Instructions Executed"); e[1]+=num(r,"Warp Stall Sampling (All Samples)")
    for k in reasons: e[2][k]+=num(r,k)
print("%-10s %8s %7s %7s  top reasons"%("op","instr%","samp%","s/i"))
for op,(n,s,c) in sorted(byop.items(), key=lambda kv:-kv[1][1])[:22]:
    print("%-10s %7.1f%% %6.1f%% %7.2f  %s"%(op,100*n/ex,100*s/tot,s/max(n,1)*1000, ", ".join("%s %.0f%%"%(k[6:],100*v/max(s,1)) for k,v in c.most_common(3))))
